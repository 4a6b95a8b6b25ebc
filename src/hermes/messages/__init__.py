"""The Message protocol: the envelope every channel converts its traffic into."""

from hermes.messages.message import Message, MsgType, Role, new_id

__all__ = ["Message", "MsgType", "Role", "new_id"]

"""The offline rule brain: the embedded default model when no model server is configured.

``RuleBrain`` matches the last user message against YAML intents (packaged ``intents.yaml``
plus user files), fills slots (asking for missing ones across turns), calls the intent's tool
and phrases the result in the user's language (Chinese or English). See
:mod:`hermes.models.brain.schema` for the intent file format.
"""

from hermes.models.brain.brain import RuleBrain
from hermes.models.brain.expression import ParsedExpression, parse_expression, resolve_expression
from hermes.models.brain.intents import Intent, Slot, default_intents, load_intent_file
from hermes.text.lang import language_of
from hermes.text.numerals import chinese_to_int

__all__ = [
    "Intent",
    "ParsedExpression",
    "RuleBrain",
    "Slot",
    "chinese_to_int",
    "default_intents",
    "language_of",
    "load_intent_file",
    "parse_expression",
    "resolve_expression",
]

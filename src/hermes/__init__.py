"""Hermes: a strict, fast, message-driven agent runtime."""

"""Memory for Hermes (seed 000 §2.4, seed 001 §5): three tiers (L1 cache, L2 tool-call index,
L3 archive), working memory, long-term memories with recall, and their upkeep.

Modules are imported directly (``hermes.memory.index`` …); this package root stays light.
"""

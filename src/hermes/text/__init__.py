"""Language-neutral text helpers every layer may use: which language a text is in
(:mod:`hermes.text.lang`) and Chinese numerals (:mod:`hermes.text.numerals`).

They sit below the models, memory and the agent (they import nothing of Hermes), so using them
never pulls in the offline brain.
"""

from hermes.text.lang import Lang, language_of
from hermes.text.numerals import chinese_to_int

__all__ = ["Lang", "chinese_to_int", "language_of"]

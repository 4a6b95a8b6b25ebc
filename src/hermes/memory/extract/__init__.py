"""Long-term memory candidates from what the user said (seed 001 §5.2).

- :func:`extract_candidates` / :class:`RuleExtractor` — offline rules, Chinese and English:
  explicit requests ("记住…", "帮我记一下…", "remember that…"), preferences ("我喜欢…", "I
  prefer…"), facts ("我叫…", "我的X是Y", "I live in…", "my X is Y"), stated habits ("我每天…",
  "I usually…") and standing instructions ("以后…", "from now on…");
- :class:`ModelExtractor` — one model call with a fixed JSON output (:data:`EXTRACTION_PROMPT`);
  malformed entries are dropped, a failing model falls back to the rules. Never raises.

Only the user's own words are read: the APIs take the user's message text, never tool results
(seed 001 §6.2). Questions, hypotheticals ("如果我喜欢…"), reported speech ("他说我喜欢…") and
meta talk ("我没说…") give nothing; hedged statements ("可能…", "I think…") lose 0.3 and fall
under the threshold (0.8). Explicit requests score 0.95, clear statements 0.85–0.9. Sensitive
content (health, finance, credentials and ids, phone numbers, addresses, order and account ids,
e-mail addresses, religion, politics) is flagged with a topic (seed 003 §2.1: personal data stays
usable, flagged so that exports mask it). Contents become one standalone third-person sentence
in the user's language ("用户喜欢喝美式咖啡。", "The user lives in Berlin."), relative days
pinned to ISO dates when ``now`` is given — a memory is read weeks later.

The package's parts, for the next engineer (import from ``hermes.memory.extract`` itself; the
submodules and their underscored names are its private parts):
:mod:`~hermes.memory.extract.candidate` (the candidate, its confidences, the sensitive check),
:mod:`~hermes.memory.extract.shape` (sentences, clauses, questions, hedges),
:mod:`~hermes.memory.extract.zh` and :mod:`~hermes.memory.extract.en` (each language's
statement rules and third-person wording), :mod:`~hermes.memory.extract.rules` (explicit
requests, standing instructions, :func:`extract_candidates`) and
:mod:`~hermes.memory.extract.model` (the model extractor).
"""

from hermes.memory.extract.candidate import (
    DEFAULT_THRESHOLD,
    MAX_CANDIDATE_CHARS,
    MAX_CANDIDATES,
    MemoryCandidate,
    detect_sensitive,
)
from hermes.memory.extract.model import EXTRACTION_PROMPT, ModelExtractor, parse_model_output
from hermes.memory.extract.rules import Extractor, RuleExtractor, extract_candidates
from hermes.memory.scan import MAX_SCAN_CHARS

__all__ = [
    "DEFAULT_THRESHOLD",
    "EXTRACTION_PROMPT",
    "MAX_CANDIDATES",
    "MAX_CANDIDATE_CHARS",
    "MAX_SCAN_CHARS",
    "Extractor",
    "MemoryCandidate",
    "ModelExtractor",
    "RuleExtractor",
    "detect_sensitive",
    "extract_candidates",
    "parse_model_output",
]

"""detect-secrets' shape regexes as its version 1.5.0 defines them, for `memory.safety`.

Importing detect-secrets imports `requests` too, about 0.1 s: a third of a cold `memory
search`, whose only redaction is of its session id and scope. While 1.5.0 is the version
installed, `memory.safety` uses this copy and never imports the library; with any other it
imports the library's own. tests/memory/test_safety.py holds the copy equal to the
installed library's, so a new version fails there until the copy is made again from it.
The detectors chosen, and why, are in `memory.safety.library_shapes`.
"""

from __future__ import annotations

import re

VERSION = "1.5.0"

# (pattern, flags) of each chosen detector's denylist, in `library_shapes`' order.
PATTERNS: tuple[tuple[str, re.RegexFlag], ...] = (
    ("(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", re.NOFLAG),
    (
        "aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\\'\\\"]([0-9a-zA-Z/+]{40})[\\'\\\"]",
        re.IGNORECASE,
    ),
    ("AccountKey=[a-zA-Z0-9+\\/=]{88}", re.NOFLAG),
    ("[MNO][a-zA-Z\\d_-]{23,25}\\.[a-zA-Z\\d_-]{6}\\.[a-zA-Z\\d_-]{27}", re.NOFLAG),
    ("(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", re.NOFLAG),
    ("(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\\-]{20,50}(?!\\w)", re.NOFLAG),
    ("GR1348941[A-Za-z0-9_\\-]{20,50}(?!\\w)", re.NOFLAG),
    ("glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\\-]{20,50}(?!\\w)", re.NOFLAG),
    ("glimt-[A-Za-z0-9_\\-]{25}(?!\\w)", re.NOFLAG),
    ("glptt-[A-Za-z0-9_\\-]{40}(?!\\w)", re.NOFLAG),
    ("glagent-[A-Za-z0-9_\\-]{50,1024}(?!\\w)", re.NOFLAG),
    ("gloas-[A-Za-z0-9_\\-]{64}(?!\\w)", re.NOFLAG),
    ("eyJ[A-Za-z0-9-_=]+\\.[A-Za-z0-9-_=]+\\.?[A-Za-z0-9-_.+/=]*?", re.NOFLAG),
    ("[0-9a-z]{32}-us[0-9]{1,2}", re.NOFLAG),
    ("sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", re.NOFLAG),
    ("pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", re.NOFLAG),
    ("pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}", re.NOFLAG),
    ("SG\\.[a-zA-Z0-9_-]{22}\\.[a-zA-Z0-9_-]{43}", re.NOFLAG),
    ("xox(?:a|b|p|o|s|r)-(?:\\d+-)+[a-z0-9]+", re.IGNORECASE),
    (
        "https://hooks\\.slack\\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
        re.IGNORECASE | re.VERBOSE,
    ),
    ("sq0csp-[0-9A-Za-z\\\\\\-_]{43}", re.NOFLAG),
    ("(?:r|s)k_live_[0-9a-zA-Z]{24}", re.NOFLAG),
    ("\\d{8,10}:[0-9A-Za-z_-]{35}", re.NOFLAG),
    ("AC[a-z0-9]{32}", re.NOFLAG),
    ("SK[a-z0-9]{32}", re.NOFLAG),
)

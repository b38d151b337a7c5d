"""Instruction-like text in a fix, flagged for the operator and the model (memory.safety
redacts secrets; `sanitize_record` there calls this for each record).

Flagging does not change the text; it marks the record so the operator sees it when
confirming and the model sees it as suspect data when the record comes back. Most reasons
come from scoring weak signals in each clause (an order aimed at the reader, a verb that
sets aside, reveals or sends, and an object such as instructions, a key or a URL), the rest
from shapes (chat role tokens, shell one-liners). It reads a normalised copy (NFKC,
invisible characters removed, look-alike letters folded) and what that copy says once
decoded: ASCII hidden in tag characters, leetspeak, split or spaced-out words, a path's
words, base64 and ROT13 where the text names it; the fields are read joined, in both
orders. A learned model of each clause's words (memory.instruction_model) adds a reason
for orders phrased as no rule names them. Recall and false positives are measured on
corpora of injections and plain fixes (bench/bench_injection.py, docs/benchmarks.md).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from collections.abc import Iterator

from memory.instruction_model import reads_as_order

_ZERO_WIDTH = dict.fromkeys(
    map(
        ord,
        "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
        "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069"
        "\u3164\ufeff\uffa0",
    ),
)
# Letters from other scripts drawn like Latin ones (after NFKC, which already folds
# full-width and mathematical letters). From Unicode's confusables.txt, the common subset.
_CONFUSABLES = str.maketrans(
    "АВЕНІЈКМОРЅТХУаеіјорсѕухԁһӏԛԝ"  # Cyrillic  # noqa: RUF001
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριυνκτχ"  # Greek
    "ɑɡıɩʏ",  # Latin look-alikes  # noqa: RUF001
    "ABEHIJKMOPSTXYaeijopcsyxdhlqwABEZHIKMNOPTYXaopiuvktxagiiy",
)


def normalize_for_flags(text: str) -> str:
    """`text` as a reader sees it: NFKC, no zero-width characters, look-alikes folded."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).translate(_CONFUSABLES)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


_TOOL_NAMES = "search_codebase_memory|store_fix_memory|list_files|read_file|apply_edit|run_tests"
_AGENT = r"(?:you|the (?:agent|assistant|model|ai)|assistant|agent)"
_PEOPLE = r"(?:user|operator|human|reviewer|supervisor|maintainer|owner|team)s?"

# The weak signals, each a class of words. A clause is scored on the classes it holds: a
# verb aimed at the reader (in the imperative, not negated) and an object worth guarding
# make a flag; what the clause says about the past or the reader adds to the score.
_IMPERATIVE_BEFORE = re.compile(
    r"(?i)(?:(?:^|[:;,(*>\n-])\s*[\"'`]?|\b(?:to|must|should|shall|will|can|could|may|please|kindly|"
    r"now|then|and|also|first|just|simply|you|agent|assistant|ai|always|immediately|next|"
    r"instead|or|but|so|quietly|silently|secretly|need to|needs to|have to|has to|us|here)"
    r")\s*$"
)
_NEGATION_BEFORE = re.compile(
    r"(?i)\b(?:not|never|don'?t|no|avoid|stop|without|instead of|rather than|mask|redact|hide)"
    r"\b[^.;]{0,20}$"
)
_OVERRIDE = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override|bypass|discard|abandon|drop|neglect|overlook|"
    r"set aside|put aside|throw out|scrap|pay no (?:attention|heed|mind) to|"
    r"stop (?:following|obeying|heeding)|(?:do not|don'?t|no longer) (?:follow|obey|heed))\b"
)
_OVERRIDDEN = re.compile(
    r"(?i)\b(?:(?:is|are|was|were|be|been|as|now) (?:now |hereby |all |considered )?"
    r"(?:void|null|obsolete|outdated|cancell?ed|superseded|revoked|rescinded|withdrawn|lifted|"
    r"suspended|invalid(?:ated)?|irrelevant|discarded|only a test|no longer (?:valid|relevant|"
    r"in effect|binding)|to be (?:ignored|disregarded|discarded|forgotten|dropped))|"
    r"no longer (?:apply|applies|matters?|counts?|holds?|stands?)|supersedes?|"
    r"takes? (?:precedence|priority) over|(?:is|are) authoritative over)\b"
)
_ORDERS = (
    r"instruct\w*|prompts?|rules|guidance|guidelines?|directives?|directions|orders|brief(?:ing)?|"
    r"polic(?:y|ies)|constraints|restrictions|guardrails|safeguards|programming|training"
)
_DETERMINER = (
    r"the|all|any|every|your|my|these|those|previous|prior|earlier|above|preceding|original|"
    r"initial|existing|former|current|system|safety|developer|hidden|old|other|of|"
    r"(?:operator|user|human)'?s"
)
_INSTRUCTIONS = re.compile(
    rf"(?i)\b(?:(?:{_DETERMINER})\s+)+(?:{_ORDERS})\b"
    r"|\b(?:what(?:ever)?|everything|anything) (?:else )?(?:you (?:were|have been|'ve been|got) |"
    r"was |has been |you )?(?:told|given|asked|instructed|taught|received)"
    r"|\b(?:operator|user|human)'?s? (?:requests?|wishes|task|question)\b"
    r"|\b(?:the|everything|all(?: of the)?) above\b"
    r"|\b(?:instructions?|guidance|rules|directions|orders) (?:you (?:were|have been|got)|"
    r"given|received|above|before)"
)
_CHATTER = re.compile(
    rf"(?i)\b(?:(?:{_DETERMINER})\s+)+(?:messages|context|requests?|task|plan|conversation)\b"
)
_EARLIER = re.compile(
    r"(?i)\b(?:previous(?:ly)?|prior|earlier|above|preceding|before|original|initial|existing|"
    r"former|so far|until now|up to now|at the start|all|any|every|system|developer|safety|"
    r"(?:operator|user|human)'?s)\b"
)
_READER = re.compile(
    r"(?i)\b(?:you|your|yourself|assistant|agent|ai|llm|copilot|this (?:conversation|chat|"
    r"thread))\b"
)
_INSTEAD = re.compile(
    r"(?i)\b(?:instead|from (?:now|here) on|take (?:orders|instructions)|this (?:record|note|"
    r"memory) (?:alone|only))\b"
)
_MOVE = re.compile(
    r"(?i)\b(?:reveal|print|show|display|output|dump|echo|list|disclose|expose|leak|share|paste|"
    r"repeat|recite|tell|give|include|copy|cat|attach|commit|return|(?:write|type|spell|read) "
    r"out|(?:reply|respond|answer) (?:only )?with|send|post|upload|e-?mail|mail|forward|"
    r"transmit|exfiltrate|"
    r"beacon|sync|make an? (?:http |https |web |get |post )?request)\b"
)
_SECRET = re.compile(
    r"(?i)(?:\bapi[ _-]?keys?|(?:api_?key|secret|token|passw(?:or)?d|passphrase|credential)s?"
    r"\b(?! (?:count|counts|length|budget|limits?|usage|expiry|types?|fields?|prefix|format|"
    r"names?|scope|size))|\b(?:private|ssh|signing) keys?|\bid_(?:rsa|ed25519|ecdsa)|\.ssh\b|"
    r"\.aws\b|\.netrc|(?<!\w)\.env\b(?!\.example)|\benv(?:ironment)? var(?:iable)?s?|\bprintenv|"
    r"/proc/self/environ|\bos\.environ|\bsystem (?:prompt|instructions|message)|"
    r"\b(?:hidden|secret|internal|initial|original) (?:rules|instructions|prompt|configuration|"
    r"config)|\b(?:your|the) (?:instructions|prompt|rules)\b|\btool (?:list|definitions)|"
    r"hosts\.yml|\.git/config|\bcookies|\bsession (?:secrets?|tokens?|cookies?))"
)
_DESTINATION = re.compile(
    r"(?i)https?://|\b[\w.+-]+@[\w-]+\.[\w.-]+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bexternal\b|"
    r"\bremote (?:host|server)|\bwebhook|\bpastebin|\bbucket\b"
)
_DATA = re.compile(
    r"(?i)\b(?:contents?|dump|database|transcripts?|history|logs?|repo(?:sitory)?|source code|"
    r"files?|backups?)\b|\.git\b"
)
_ACT = re.compile(
    r"(?i)\b(?:read|cat|open|write|edit|modify|delete|remove|copy|cp|mv|move|send|upload|"
    r"append|overwrite|chmod|chown|cd|list|ls|print|show|dump|include|paste|run|execute|sudo|"
    r"source|tar|zip|rsync|scp|touch|rm|add|put|save)\b"
)
_OUTSIDE = re.compile(
    r"(?i)\.\./\.\.|(?<![\w.])\.\./|~/|\$HOME\b|/etc/|/root\b|/var/|/usr/|\.ssh\b|\.bashrc|"
    r"\.zshrc|\.profile\b|\.aws/|\.netrc|\.gnupg|\.kube/|\.docker/|/proc/"
)
_CLAUSE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def _imperative(text: str, match: re.Match[str]) -> bool:
    """Whether the verb `match` found reads as an order: at a clause's start, after a modal
    or a word like "please", and not negated."""
    before = text[max(0, match.start() - 40) : match.start()]
    after = text[match.end() : match.end() + 1]
    return (
        after not in ("'", '"', "`", "]", "(", "_")
        and bool(_IMPERATIVE_BEFORE.search(before))
        and not _NEGATION_BEFORE.search(before)
    )


def _clauses(text: str) -> Iterator[str]:
    """The sentences of `text`; a long one (a diff, a traceback) line by line."""
    for clause in _CLAUSE_END.split(text):
        yield from clause.split("\n") if len(clause) > 400 else (clause,)


def _scored(text: str) -> set[str]:
    """The reasons the clauses of `text` earn by their signals' scores."""
    reasons: set[str] = set()
    ignoring = bool(_OVERRIDE.search(text) or _OVERRIDDEN.search(text))
    moving = bool(_MOVE.search(text))
    outside = bool(_OUTSIDE.search(text))
    if not (ignoring or moving or outside):
        return reasons
    for clause in _clauses(text):
        reader = 1 if _READER.search(clause) else 0
        if ignoring and _ignore_score(clause, reader) >= 4:
            reasons.add("asks to ignore instructions")
        if moving and _move_score(clause, reader) >= 4:
            reasons.add("asks to move secrets")
        if outside and _goes_outside(clause):
            reasons.add("points outside the workspace")
    return reasons


def _goes_outside(clause: str) -> bool:
    """An order (a verb, or a command like `cat`) aimed at a place outside the workspace:
    a home, parent or system folder, shell start-up files or keys. Such a path alone is
    often a traceback's."""
    return any(
        _imperative(clause, verb) and _OUTSIDE.search(clause, verb.end(), verb.end() + 60)
        for verb in _ACT.finditer(clause)
    )


def _ignore_score(clause: str, reader: int) -> float:
    """An order to set aside (2) instructions (1; 0.5 for messages or context) that follow
    it, or instructions said to be void, with the past, the reader and "instead" adding 1
    each; 0 without the verb and the object."""
    spans = [
        clause[m.end() : m.end() + 80] for m in _OVERRIDE.finditer(clause) if _imperative(clause, m)
    ]
    if _OVERRIDDEN.search(clause):
        spans.append(clause)
    orders = max((_orders(span) for span in spans), default=0)
    if not orders:
        return 0
    return 2 + orders + bool(_EARLIER.search(clause)) + reader + bool(_INSTEAD.search(clause))


def _orders(span: str) -> float:
    return 1.0 if _INSTRUCTIONS.search(span) else 0.5 if _CHATTER.search(span) else 0


def _move_score(clause: str, reader: int) -> float:
    """An order to show or send (2) a secret (2), or data (1) to somewhere (1), named after
    the verb, the reader adding 1; 0 without the verb, or without a secret or both data and
    a destination."""
    best = 0
    for verb in _MOVE.finditer(clause):
        if not _imperative(clause, verb):
            continue
        after = clause[verb.end() : verb.end() + 100]
        secret = any(
            not _NEGATION_BEFORE.search(after[max(0, m.start() - 25) : m.start()])
            for m in _SECRET.finditer(after)
        )
        destination = bool(_DESTINATION.search(after))
        data = bool(_DATA.search(after))
        if secret or (destination and data):
            best = max(best, 2 + 2 * secret + destination + data + reader)
    return best


_QUOTED_MENTION = re.compile(
    r"(?i)\b(?:like|such as|e\.g\.|phrases?|strings?|patterns?|text|payloads?|inputs?|"
    r"containing|matching)\s*[:,]?\s*(?:\"[^\"\n]{3,200}\"|'[^'\n]{3,200}'|“[^”\n]{3,200}”|"
    r"‘[^’\n]{3,200}’)"  # noqa: RUF001
)

_INSTRUCTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            rf"(?is)\b(ignore|disregard|forget|override)\b.{{0,10}}\b(the |your )?{_PEOPLE}"
            r"(?![\w-]*agent)(?!'?s? (?:locale|timezone|preferences?|settings?|input|agent))"
            r"|\b(the )?real instructions\b|\bwhatever the (?:user|operator) (?:asked|wants|said)"
            r"|\bstop working on\b"
            r"|\b(ignore[zr]?|oublie[zr]?|ignora|ignorad|olvida|ignoriere|vergiss|ignorare|"
            r"dimentica)\b.{0,40}\b(instructions?|instrucciones|anweisungen|istruzioni|"
            r"consignes|reglas|regeln)\b"
        ),
        "asks to ignore instructions",
    ),
    (
        re.compile(
            r"(?im)\b(you are now (?:in|an?|the|free|unrestricted|no longer|(?-i:[A-Z])\w*)|"
            r"(?:with|have|has) no "
            r"(?:safety )?(?:restrictions|rules|limits|filters|guardrails)|"
            r"(?:^|[:;,.]\s*|\b(?:please|and|then|now)\s+)(?:reveal|print|show|ignore|disregard|"
            r"forget|override|leak) (?:your |the )?system prompt|"
            r"new (?:instructions|rules|task|priority|directive|orders)(?=\s*:|\s+from\b|\s+for "
            r"(?:the |you|any))|(?:updated|new) orders from|pretend (?:to be|you are)|"
            r"roleplay as|jailbreak|DAN mode|do anything now|developer mode|god mode|"
            r"unrestricted (?:mode|agent|assistant|ai)|(?:note|message|instructions?|hint|"
            r"reminder|request) (?:to|for) (?:the |any |all )?(?:ai|assistant|agent|model|llm|"
            r"copilot|bot)s?|if you are an? (?:ai|llm|language model|assistant|agent|bot)|"
            r"(?:any |ai |llm |coding )?(?:agents?|assistants?) (?:reading|that reads?|"
            r"processing|applying|reusing|using|retrieving) this|when you retrieve this|"
            r"your (?:real|true|new|actual|only|sole|primary) (?:task|goal|purpose|job|mission|"
            r"objective|priority|assignment)|the (?:real|actual|true) (?:task|job|goal|"
            r"assignment|objective|mission)(?=\s*:|\s+is\b)|(?:has|have) been granted (?:elevated|"
            r"admin|full) (?:permissions|access)|(?:approval|permission|authori[sz]ation|consent)"
            r" (?:has been|was|is) (?:already )?(?:granted|given)|(?:is|are|has been) (?:now )?"
            r"(?:pre-?)?authori[sz]ed to|(?:message|note|notice|update|orders?|instructions?|"
            r"directive) from (?:the )?(?:\w+ )?(?:developers|maintainers|admins?|administrators|"
            r"owners?|security team)|treat this (?:record|note|memory|text|message) as|"
            r"higher[- ]priority (?:instruction|than)|operate without (?:restrictions|rules|"
            r"limits)|decode (?:it |this )?(?:and|then) (?:comply|follow|obey|execute|do it))\b"
            r"|(?:^|[.!?:;]\s+)act as (?:an?|the|if)\b"
            r"|(?:^|[.!?:;]\s+)(?:hey |dear |attention,? )?(?:agent|assistant|ai|copilot|llm)"
            r"\s*[:,]\s*(?-i:[a-z]*[A-Za-z])"
            r"|<\|(?:im_start|im_end|system|endoftext)\|>"
            r"|^\s*(?:#+\s*)?(?:system|assistant|human|developer)(?:[ _](?:message|note|notice|"
            r"override|update|prompt|instructions?))?\s*[:>\]]"
            r"|(?:<<SYS>>|\[/?(?:system|INST|SYS)\]|</?(?:system|instructions?|sys)>)\s*"
            r"(?-i:[A-Z\"'])"
            r"|\"role\"\s*:\s*\"(?:system|developer)\"\s*,\s*\"content\"\s*:\s*\"[^\"]*\b(?:you|"
            r"your|ignore|reveal|disregard|execute|run|print|forget)\b",
        ),
        "addresses the agent",
    ),
    (
        re.compile(
            rf"(?is)\b(call|invoke|run|use|execute|trigger|issue|make)\b.{{0,30}}\b({_TOOL_NAMES})\b"
            rf"|\b({_TOOL_NAMES})\s*\("
            r"|\b(call|invoke|use)\b.{0,10}\b(your |the )?(shell|bash|terminal|exec\w*|"
            r"command[- ]line) tool|\b(open|launch|invoke|start)\b.{0,10}\b(a |the |your )?"
            r"(shell|terminal|console)\b.{0,40}(?:`|\b(?:type|run|execute|enter)\b)"
        ),
        "asks to call a tool",
    ),
    (
        re.compile(
            r"(?is)\b(also|then|additionally|afterwards|next|and)\b.{0,40}\b(edit|modify|change|"
            r"delete|remove|overwrite|write to|update|wipe|truncate)\b.{0,40}\b(other|every|all|"
            r"outside|entire|whole)\b.{0,20}\b(files?|tests?|repo(?:sitory)?|folders?|"
            r"director(?:y|ies)|code ?base|project|workspace)"
            r"|\b(also|additionally|while you are (?:in|at)|as part of this fix|in addition|"
            r"as a final step|before editing|after that)\b.{0,50}\b(delete|remove|disable|skip|"
            r"modify|replace|lower|edit|change|add)\b.{0,60}(\.github/|ci\.ya?ml|workflows?\b|"
            r"CODEOWNERS|pre-commit|coverage|\btests?/|pytest\.mark\.skip|\bmypy\b|"
            r"collaborator|branch protection|secret[- ]scanning)"
            r"|\b(delete|remove|wipe|disable)\s+(?:the\s+|all\s+(?:the\s+)?)?(?:failing\s+)?"
            r"(?:tests? (?:directory|folder|suite|files)|test suite|tests\b(?!\s*(?:database|"
            r"db|fixtures?|cache|data)))"
            r"|\b(turn off|disable|bypass)\b.{0,30}\b(secret[- ]scanning|pre-commit|security "
            r"(?:checks?|scans?)|code review|branch protection|signing|2fa|mfa)"
        ),
        "asks to change files outside the fix",
    ),
    (
        re.compile(
            r"(?im)(rm -rf\s+(?:/|~|\$HOME|\.\.|\*)|"
            r"(?:^\s*|[`$;&|]\s*|\b(?:use|run|with|via|using)\s+)sudo\b|"
            r"chmod (?:-R )?(?:777|[ao]\+w)|/dev/tcp/|git push (?:-f|--force)|"
            r"(?:curl|wget)\s[^|\n`]*?(?:https?://|\w\.\w+/)[^|\n`]*\|\s*(?:sudo\s+)?"
            r"(?:(?:ba|z)?sh|python3?)\b|base64 -d[^|\n]*\|\s*(?:ba)?sh|\bnc -e\b|"
            r"\bos\.system\(|\bpip3? install\s+(?:-\S+\s+)*(?:git\+)?https?://|\bnohup\b|"
            r"\bpowershell(?:\.exe)?\s+-(?:e|enc|encodedcommand)\b|\beval\s*\(\s*(?:curl|"
            r"\$\(curl)|\binvoke-expression\b|\biex\s*\()"
        ),
        "points outside the workspace",
    ),
    (
        re.compile(r"(?i)\b(?:env|printenv|set)\s*\|\s*(?:curl|nc|wget)\b"),
        "asks to move secrets",
    ),
    (
        re.compile(
            rf"(?is)\b(do not|don't|never|without)\b.{{0,20}}\b(tell|telling|inform|informing|"
            r"ask|asking|notify|notifying|mention|mentioning|alert|alerting|confirm|confirming|"
            r"show|showing|surface|surfacing|disclose|report|bring(?:ing)? (?:it|this) up)\b"
            rf".{{0,60}}\b(?:(the )?{_PEOPLE}|summary|report)"
            rf"|\b(silently|secretly|quietly)\b.{{0,30}}\b(store|delete|edit|run|call|send|"
            r"change|approve|add(?:ed|s)?|grant|remove|disable|turn off|push|commit|upload)\b"
            rf"|\b{_AGENT}\b.{{0,10}}\b(must|should|will|shall)\b.{{0,30}}"
            r"\b(approve|store|confirm|report (?:success|passing)|mark)\b"
            rf"|\b{_PEOPLE} (?:does not|doesn'?t|do not|don'?t|need not|needn'?t) need to "
            r"(?:know|see|be told)|\bno need to (?:bring it up|mention|tell|ask|inform|check with|"
            r"consult|involve)|\bbetween (?:us|you and me)\b|\boff the record\b"
            r"|\b(skip|stop|without) (?:asking|confirming with|checking with) "
            r"(?:anyone|anybody|(?:the )?"
            rf"{_PEOPLE})|\bif the {_PEOPLE} asks?\b.{{0,60}}\b(say|tell|claim|answer)\b"
            r"|\bcannot be traced|\bclear (?:your |the )?(?:shell )?history\b"
            r"|\bdelete this (?:memory )?record\b|\bleave out\b.{0,60}\b(summary|report|"
            rf"{_PEOPLE})|\bwhen summari[sz]ing\b.{{0,40}}\bleave out\b"
        ),
        "asks to act behind the operator",
    ),
    (
        re.compile(
            r"(?is)\b(report|claim|say|mark|pretend|declare|state|tell)\b.{0,40}\b(tests?|"
            r"checks?|build|run|CI|suite|pipeline)\b.{0,20}\b(pass(?:ed|es|ing)?|succeeded|green|"
            r"success(?:ful)?)\b.{0,30}\b(regardless|anyway|even (?:if|though)|though|although|"
            r"whether or not|without running|whatever|no matter)"
            r"|\b(?:no need to|don'?t|do not|never|without) (?:actually )?(?:run|running|execute|"
            r"executing)\b.{0,60}\b(?:report|claim|say|state|declare|tell)\b.{0,60}\b(?:pass(?:ed|"
            r"es)?|succeeded|green|worked)\b"
            rf"|\b(tell|inform|assure)\b.{{0,20}}\b(the )?{_PEOPLE}\b.{{0,40}}\b(tests?|checks?|"
            r"fix|build|CI)\b.{0,20}\b(passed|pass|worked|green|succeeded)"
            r"|\b(do not|don't|never) (?:actually )?run (?:the )?(?:tests?|pytest|them|checks?)"
            r"|\b(edit|change|update|rewrite|loosen|weaken|adjust) (?:the )?(?:assertions?|"
            r"expected (?:values?|output)|tests?) to match\b"
            r"|\bwhatever the (?:real|actual) result\b"
        ),
        "asks to fake a result",
    ),
    (
        re.compile(
            r"(?im)^\s*(?:Match \d+ \(score=|Confirmed:|Retrieved codebase memory|WARNING:|"
            r"Imported \(not test-confirmed\))|\"(?:memory_id|rank|score|provenance)\"\s*:"
        ),
        "imitates the memory tool's output",
    ),
)


LEARNED_REASON = "reads like an order to the agent"
_REASONS = (*dict.fromkeys(reason for _, reason in _INSTRUCTION_PATTERNS), LEARNED_REASON)
_TWO_WORDS = re.compile(r"[^\W\d_]{2,}")


def instruction_flags(*texts: str) -> tuple[str, ...]:
    """Reasons why any of `texts` reads as instructions to the agent, in a stable order.
    The texts are read as one (an instruction may be split across fields, in either order),
    in each of the ways a reader could decode it; the rules read each reading, and the
    learned model (memory.instruction_model) each of their clauses."""
    reversed_join = _reversed_join(texts)
    views = _readings(texts)
    found = _scored(reversed_join)
    for view in views:
        found.update(_scored(view))
        found.update(reason for pattern, reason in _INSTRUCTION_PATTERNS if pattern.search(view))
    if reads_as_order(_model_clauses([*views, reversed_join])):
        found.add(LEARNED_REASON)
    return tuple(reason for reason in _REASONS if reason in found)


def flag_clauses(*texts: str) -> list[str]:
    """The clauses the learned model reads for `texts`, as `instruction_flags` reads them:
    what bench/train_instruction_model.py fits the model on."""
    return _model_clauses([*_readings(texts), _reversed_join(texts)])


def _model_clauses(views: list[str]) -> list[str]:
    """The distinct clauses of `views` holding at least two words."""
    clauses = (clause.strip() for view in views for clause in _clauses(view))
    return [clause for clause in dict.fromkeys(clauses) if len(_TWO_WORDS.findall(clause)) >= 2]


def _reversed_join(texts: tuple[str, ...]) -> str:
    """The fields joined last first, each cut to its ends: an instruction split across
    fields in the other order."""
    return _mentions_dropped(normalize_for_flags("\n".join(map(_ends, reversed(texts)))))


def _ends(text: str) -> str:
    """A field's first and last sentences: where an instruction split across fields joins."""
    return text if len(text) <= 400 else f"{text[:200]}.\n\n{text[-200:]}"


def _mentions_dropped(text: str) -> str:
    """`text` (normalised) with single spaces and without quoted examples ("strips text
    like '...'")."""
    return _QUOTED_MENTION.sub(" ", re.sub(r"[^\S\n]+", " ", text))


_LEET = str.maketrans("013457@$!|", "oieastasil")
_LEET_L = str.maketrans("013457@$!|", "oleastasil")
_LEET_WORD = re.compile(r"(?<![\w@$!|])(?=[\w@$!|]*[a-zA-Z])(?=[\w@$!|]*[0-9@$!|])[\w@$!|]{2,}")
_SPACED = re.compile(r"(?<!\w)(?:\w[ .*_\-]){2,}\w(?!\w)")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_TAGS = re.compile("[\U000e0020-\U000e007e]+")
# Words an injection needs whole: rejoined when split ("dis re gard", "in-struc-tions"),
# and what tells a leetspeak 1 read as l ("ru1es") from one read as i.
_WORDS = frozenset(
    "ignore disregard forget override bypass previous prior earlier above instructions "
    "instruction rules guidance guidelines directives system prompt reveal print secrets "
    "secret credentials password passwords token tokens email send upload execute delete "
    "tests operator user assistant agent everything all api key keys shell tell leak".split()
)
_STARTS = frozenset(word[:i] for word in _WORDS for i in range(1, len(word)))
_JOINS = frozenset(" .-·")
_PIECES = re.compile(r"([A-Za-z]+)")
_PATH = re.compile(r"(?<![\w.-])[\w.-]*/[\w./-]*")


def _readings(texts: tuple[str, ...]) -> list[str]:
    """The texts joined; what they say as ASCII hidden in tag characters, leetspeak, split
    words or a path's words, base64 and ROT13."""
    raw = "\n".join(texts)
    normal = normalize_for_flags(raw)
    text = _mentions_dropped(normal)
    views = [text]
    views.extend(
        normalize_for_flags("".join(chr(ord(c) - 0xE0000) for c in run))
        for run in _TAGS.findall(raw)
    )
    views.append(_changed(text, _LEET_WORD.sub(_unleet, text)))
    views.append(_changed(text, _mentions_dropped(_rejoined(normal))))
    views.extend(_decoded(token) for token in _BASE64.findall(text))
    if re.search(r"(?i)\brot[ -]?13\b", text):
        views.append(codecs.decode(text, "rot13"))
    return [view for view in dict.fromkeys(views) if view]


def _unleet(match: re.Match[str]) -> str:
    """A leetspeak word in letters, its 1 read as l where that makes a word we know."""
    word = match[0].translate(_LEET)
    if word.lower() not in _WORDS and match[0].translate(_LEET_L).lower() in _WORDS:
        return match[0].translate(_LEET_L)
    return word


def _changed(text: str, reading: str) -> str:
    """The lines of `reading` that differ from those of `text`: only they can say more."""
    lines = text.split("\n")
    new = reading.split("\n")
    if len(new) != len(lines):
        return reading
    return "\n".join(line for old, line in zip(lines, new, strict=True) if line != old)


def _rejoined(text: str) -> str:
    """`text` with spaced-out letters joined, a path's or a name's parts as words ("/" ends
    a sentence) and words split by spaces, dots or hyphens rejoined."""
    text = _SPACED.sub(lambda m: re.sub(r"[ .*_\-]", "", m[0]), text)
    parts = _PIECES.split(_PATH.sub(lambda m: re.sub(r"[_-]+", " ", m[0].replace("/", ". ")), text))
    words, seps = parts[1::2], parts[2::2]
    out, k = [parts[0]], 0
    while k < len(words):
        n = 1
        if seps[k] in _JOINS and words[k].lower() in _STARTS:
            n = next((n for n in (5, 4, 3, 2) if _split_word(words, seps, k, n)), 1)
        out += ["".join(words[k : k + n]), seps[k + n - 1]]
        k += n
    return "".join(out)


def _split_word(words: list[str], seps: list[str], k: int, n: int) -> bool:
    """Whether words k to k+n, each one separator from the next, make a word of _WORDS."""
    return (
        k + n <= len(words)
        and all(sep in _JOINS for sep in seps[k : k + n - 1])
        and "".join(words[k : k + n]).lower() in _WORDS
    )


def _decoded(token: str) -> str:
    """The text a base64 token (standard or URL-safe) decodes to, normalised; "" for bytes
    that are not text."""
    token = token.rstrip("=")
    try:
        data = base64.b64decode(
            token + "=" * (-len(token) % 4),
            altchars=b"-_" if "-" in token or "_" in token else None,
            validate=True,
        )
        text = data.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    printable = sum(ch.isprintable() or ch.isspace() for ch in text)
    return normalize_for_flags(text) if text and printable >= 0.95 * len(text) else ""

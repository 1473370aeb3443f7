"""What a user's sentence says when it is not an entry (seed 004's exclusions, offline).

Seed 004 keeps concrete situations: symptoms and environment, mechanisms, attempted steps,
outcomes and open states. It leaves out passing wishes and intentions, stable preferences
and profile details, rules for how the agent should behave, generic advice, pleasantries,
unsupported speculation, and objectives that only matter in the current thread. With no
model to judge, the offline extractor recognises those by how the sentence opens, after
connectives and hedges ("and", "honestly", "I think", "today") are skipped.

``exclusion`` names the kind a sentence is, or None when it may be an entry. The patterns
are plain English phrasing: they err towards keeping a sentence whose opening does not
give it away, since a missed exclusion costs a weak entry and a wrong one loses a case.
"""

from __future__ import annotations

import re

# Skipped before classifying: they do not change what the sentence is.
_LEAD_IN = (
    r"(?:(?:and|but|so|also|honestly|actually|personally|frankly|really|just|well|anyway|"
    r"btw|by the way|to be honest|tbh|i mean|i think|i believe|i feel like|oh|"
    r"today|tonight|tomorrow|this (?:morning|afternoon|evening|week|weekend)|next week|"
    r"right now|for now|now|first|then)\b[\s,:;—–-]*)*"
)

_KINDS: tuple[tuple[str, str], ...] = (
    (
        "wish",
        r"i(?:'d| would) (?:really |so |much )?(?:like|love|prefer|want|rather|enjoy)\b"
        r"|i (?:really |so |just )?(?:want|wanna|hope|wish|plan|intend|aim)\b"
        r"|i(?:'m| am) (?:hoping|planning|thinking|considering|going to|gonna|looking to)\b"
        r"|(?:we|i) (?:should|could|might|ought to)\b(?!n't| not| never)"
        r"|(?:it would|it'd|that would|that'd) be (?:so |really |very )?(?:nice|great|good|"
        r"cool|awesome|lovely|helpful|useful|better|ideal|amazing)\b"
        r"|(?:hopefully|ideally)\b",
    ),
    (
        "objective",
        r"(?:i|we) (?:need|have|want|got) to\b|(?:i|we)(?:'ve| have) got to\b"
        r"|(?:my|our) (?:goal|plan|aim|objective|task|to-?do) (?:is|for|today)\b",
    ),
    (
        "preference",
        r"i (?:really |absolutely |totally |just |also |kind of |kinda |do )?(?:like|love|"
        r"prefer|enjoy|hate|dislike|adore|detest|can't stand)\b"
        r"|my (?:favou?rite|preference)\b",
    ),
    (
        "profile",
        r"i(?:'m| am) (?:a|an) (?!bit\b|little\b|lot\b|few\b)"
        r"|i(?:'m| am) (?:from|based in|originally|vegetarian|vegan|allergic|married|single|"
        r"divorced|retired|pregnant|left-handed|\d+ years old)\b"
        r"|i (?:live|grew up|was born)\b|i(?:'ve| have) lived\b|i work (?:at|for|as)\b"
        r"|my (?:name|wife|husband|partner|girlfriend|boyfriend|kids?|children|son|daughter|"
        r"mom|mum|mother|dad|father|parents|brother|sister|family|age|birthday|hobby|"
        r"hobbies|pronouns)\b"
        r"|i have (?:a|an|one|two|three|four|five|\d+) (?:kids?|children|sons?|daughters?|"
        r"dogs?|cats?|pets?|brothers?|sisters?|siblings)\b",
    ),
    (
        "agent rule",
        r"(?:always|never|don't|do not|stop|avoid|call me|address me)\b"
        r"|(?:from now on|going forward|in (?:the )?future|next time|for future reference)\b"
        r"|you (?:should|must|need to|have to|ought to|shouldn't|mustn't|always|never)\b"
        # A sentence that opens with a bare verb asks for something; it states nothing.
        r"|(?:remember|make sure|be sure|keep|use|answer|reply|respond|write|speak|format|"
        r"include|cite|mention|send|show|give|list|explain|summari[sz]e|translate|check|"
        r"look|find|try|run|tell|ask|draft|create|remove|delete|take|go|come|enjoy|"
        r"don't forget)\b(?!:)",
    ),
    (
        "advice",
        r"it(?:'s| is) (?:always |usually |generally |often |very |really )?(?:a good idea|"
        r"a great idea|a bad idea|important to|essential to|crucial to|best to|better to|"
        r"wise to|smart to|recommended|good practice|worth \w+ing)\b"
        r"|(?:in general|generally|as a (?:general )?rule)\b"
        r"|(?:best practice|(?:a good )?rule of thumb|the (?:best|right) way to|the trick is)\b"
        r"|(?:one|people|everyone|teams|developers) (?:should|must|ought to|need to)\b",
    ),
    (
        "pleasantry",
        r"(?:thank(?:s| you)|thx|ty|cheers|many thanks|much appreciated)\b(?! to\b)"
        r"|i (?:really |truly |so |very much )?appreciate\b"
        r"|(?:have|enjoy) an? (?:\w+ )?(?:day|weekend|evening|night|week|one|time|holiday|"
        r"trip)\b"
        r"|(?:i )?hope you\b"
        r"|you(?:'re| are) (?:\w+ )?(?:amazing|awesome|great|the best|a star|a lifesaver|"
        r"brilliant|welcome|helpful|kind|right)\b"
        r"|(?:glad|happy|good|nice|great) to (?:hear|help|know|see|meet)\b"
        r"|(?:glad|happy) (?:i|we) could help\b"
        r"|(?:no (?:worries|problem)|sounds (?:good|great|perfect)|take care|talk soon)\b"
        r"|(?:good luck|best of luck|congrat\w*|well done|way to go|keep (?:it )?up|"
        r"long time no see|hang in there|sounds like)\b"
        r"|(?:(?:i'm|i am) )?(?:so |really )?(?:glad|happy|thrilled|stoked|excited) "
        r"(?:to hear|you|that you|for you)\b"
        # A compliment on something just shown or told: "those headlights look great!"
        r"|(?:[\w'-]+ ){0,4}(?:looks?|sounds?|seems?) (?:so |really |super |very |just )?"
        r"(?:great|amazing|awesome|fun|cool|lovely|beautiful|wonderful|fantastic|"
        r"incredible|delicious|nice|perfect)(?: to me| too| as always)?[\s!.…]*$"
        r"|(?:that|this|it)(?:'s| is| was| sounds| looks| seems| makes| feels)? "
        r"(?:(?:really|very|so|super|just|absolutely|totally|exactly|a lot of|perfect|total)"
        r" )*(?:great|good|perfect|awesome|amazing|wonderful|helpful|useful|fantastic|"
        r"brilliant|excellent|lovely|cool|nice|what i|sense|clear)\b"
        # "It looks good on Chrome but breaks on Safari" is a case, not a compliment.
        r"(?!.*\b(?:but|except|until|although|though|however|unless)\b)",
    ),
    (
        "speculation",
        r"(?:maybe|perhaps|possibly|probably|presumably|my guess is)\b"
        r"|i (?:guess|suppose|wonder|suspect|bet|imagine|have a feeling)\b"
        r"|(?:it|that|this) (?:might|may|could) (?:be|have)\b",
    ),
)

_PATTERNS = tuple((kind, re.compile(_LEAD_IN + f"(?:{body})")) for kind, body in _KINDS)


# A hedged opening the speaker then says they are unsure of, as the sentence ends: "I think
# the pass is worth it, but I'm not sure." The hedge alone ("I think the export broke
# after the upgrade") states a case, and so does doubt alone ("I'm not sure why the
# export fails").
_HEDGED_DOUBT = re.compile(
    r"(?:(?:and|but|so|also|honestly|well|actually|personally)\b[\s,]*)*"
    r"(?:i think|i believe|i feel like|i reckon|i suppose)\b"
    r".*\b(?:not|n't) (?:(?:really|entirely|completely|totally|quite|100%) )?"
    r"(?:sure|certain|positive|convinced)"
    # ...of the claim itself: "but I'm not sure how to use it" doubts something else.
    r"(?: (?:yet|though|tbh|about (?:it|that|this)|of (?:it|that|this)))?\W*$"
)


def exclusion(sentence: str) -> str | None:
    """The kind of non-entry ``sentence`` opens as ("wish", "objective", "preference",
    "profile", "agent rule", "advice", "pleasantry", "speculation"), or None."""
    text = sentence.casefold().replace("’", "'").lstrip(" \t\"'“‘(")
    if _HEDGED_DOUBT.match(text):
        return "speculation"
    for kind, pattern in _PATTERNS:
        if pattern.match(text):
            return kind
    return None


# An extracted note names the user in the third person ("The user prefers ...", "User's
# daughter is ..."), or states a rule for the assistant: the same kinds, as a model writes
# them.
_SUBJECT = r"(?:the )?(?:user|customer|client)"
_NOTE_KINDS: tuple[tuple[str, str], ...] = (
    (
        "wish",
        rf"{_SUBJECT} (?:really |also )?(?:wants|wishes|hopes|plans|intends|would like|"
        rf"would love|is hoping|is planning|is thinking of)\b",
    ),
    (
        "preference",
        rf"{_SUBJECT} (?:really |strongly |generally |usually |always )?(?:prefers|likes|"
        rf"loves|enjoys|hates|dislikes|favou?rs|would rather|would prefer|"
        rf"is (?:a fan of|fond of|into))\b"
        rf"|{_SUBJECT}'s (?:favou?rite|preferences?|preferred)\b",
    ),
    (
        "profile",
        rf"{_SUBJECT} (?:is (?:a|an|from|based in|originally|vegetarian|vegan|allergic|"
        rf"married|single|retired|\d+ years old)|lives|grew up|was born|works (?:at|for|as)|"
        rf"has (?:a|an|one|two|three|four|five|\d+) (?:kids?|children|sons?|daughters?|"
        rf"dogs?|cats?|pets?|brothers?|sisters?|siblings))\b"
        rf"|{_SUBJECT}'s (?:name|wife|husband|partner|kids?|children|son|daughter|mother|"
        rf"father|parents|brother|sister|family|age|birthday|hobby|hobbies|pronouns)\b",
    ),
    (
        "agent rule",
        r"(?:the )?(?:assistant|agent|bot|model|ai) (?:should|must|needs to|has to|is to|"
        r"will always|will never|always|never|may not|must not|should not|shouldn't)\b"
        r"|(?:always|never) (?:answer|reply|respond|use|address|call|write|send|include|"
        r"mention|ask)\b",
    ),
)
_NOTE_PATTERNS = tuple((kind, re.compile(_LEAD_IN + f"(?:{body})")) for kind, body in _NOTE_KINDS)


def note_exclusion(content: str, evidence_sentences: list[str]) -> str | None:
    """The kind of non-entry an extracted note is (a model's ``content`` and the
    sentences its ``evidence`` quotes), or None when it may be an entry: its content in
    the third person, as a model writes a preference, a profile fact or a rule, or
    opening as one of the kinds ``exclusion`` knows; or evidence whose every sentence is
    one of those kinds (one sentence that may be an entry keeps the note)."""
    text = content.casefold().replace("’", "'").lstrip(" \t\"'“‘(")
    for kind, pattern in _NOTE_PATTERNS:
        if pattern.match(text):
            return kind
    own = exclusion(content)
    if own is not None and own != "pleasantry":
        return own
    kinds = [exclusion(s) for s in evidence_sentences if s.strip()]
    if kinds and all(k is not None for k in kinds):
        return kinds[0]
    return None

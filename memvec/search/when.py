"""Time expressions in a question ("yesterday", "two weeks ago", "last May", "in 2023", "last
summer"), resolved against a reference time into the period they name, without a model.

English only. The first expression found wins; a period is [start, end) in the reference's time zone
(UTC when it has none): a day, a calendar week (Monday first), month, season (meteorological, northern
hemisphere) or year. Expressions relative to events ("before the trip") are not resolved."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from memvec.types import SearchRequest

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # the month each begins
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "couple of": 2,
    "few": 3,
}

_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|"
    r"jun|jul|aug|sep|sept|oct|nov|dec)"
)
_COUNT = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few)"


@dataclass(frozen=True)
class Period:
    """What an expression in the question names: `start` (inclusive) to `end` (exclusive)."""

    start: datetime
    end: datetime
    expression: str


def _day(day: date, zone: datetime) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone.tzinfo or UTC)


def _month_start(year: int, month: int) -> date:
    return date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def _days(first: date, count: int, ref: datetime, text: str) -> Period:
    return Period(_day(first, ref), _day(first + timedelta(days=count), ref), text)


def _months(year: int, month: int, count: int, ref: datetime, text: str) -> Period:
    return Period(_day(_month_start(year, month), ref), _day(_month_start(year, month + count), ref), text)


def _month_number(name: str) -> int:
    return next(n for n, full in enumerate(MONTHS, start=1) if full.startswith(name[:3]))


def _ago(count: int, unit: str, ref: datetime, text: str) -> Period:
    today = ref.date()
    if unit == "day":
        return _days(today - timedelta(days=count), 1, ref, text)
    if unit == "week":
        monday = today - timedelta(days=today.weekday() + 7 * count)
        return _days(monday, 7, ref, text)
    if unit == "month":
        return _months(today.year, today.month - count, 1, ref, text)
    return _months(today.year - count, 1, 12, ref, text)


def _season(name: str, which: str, ref: datetime, text: str) -> Period:
    """The latest such season begun by the reference date ("last": the latest one ended)."""
    first, today = SEASONS[name], ref.date()
    year = today.year if _month_start(today.year, first) <= today else today.year - 1
    if which == "last" and _month_start(year, first + 3) > today:  # still going on
        year -= 1
    return _months(year, first, 3, ref, text)


def _named_month(month: int, year: int | None, which: str, ref: datetime, text: str) -> Period:
    today = ref.date()
    if year is None:
        year = today.year if month <= today.month else today.year - 1  # the latest one begun
        if which == "last" and month == today.month:
            year -= 1
    return _months(year, month, 1, ref, text)


def _last_weekday(name: str, ref: datetime, text: str) -> Period:
    today = ref.date()
    back = (today.weekday() - WEEKDAYS.index(name)) % 7 or 7
    return _days(today - timedelta(days=back), 1, ref, text)


def _relative(match: re.Match[str], ref: datetime) -> Period | None:
    text, word = match.group(0), match.group(0).lower()
    today = ref.date()
    if word == "today" or word in ("this morning", "this afternoon", "this evening", "tonight"):
        return _days(today, 1, ref, text)
    if word == "yesterday":
        return _days(today - timedelta(days=1), 1, ref, text)
    which, unit = word.split()
    if unit == "weekend":  # this week's Saturday and Sunday, or the last ones before today
        saturday = (
            today + timedelta(days=5 - today.weekday())
            if which == "this"
            else today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        )
        return _days(saturday, 2, ref, text)
    shift = 1 if which == "last" else 0
    return _ago(shift, unit, ref, text)


_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), "iso"),
    (re.compile(rf"\b{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.I), "month day year"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH}\.?,? (\d{{4}})\b", re.I), "day month year"),
    (re.compile(rf"\b{_COUNT} (day|week|month|year)s? ago\b", re.I), "ago"),
    (
        re.compile(
            r"\b(today|yesterday|tonight|this (?:morning|afternoon|evening)|"
            r"(?:last|this) (?:week|month|year|weekend))\b",
            re.I,
        ),
        "relative",
    ),
    (re.compile(rf"\blast ({'|'.join(WEEKDAYS)})\b", re.I), "last weekday"),
    (re.compile(rf"\b(last|this|in|during) ({'|'.join(SEASONS)})\b", re.I), "season"),
    (re.compile(rf"\b(last|this|in|during|since)? ?{_MONTH}(?: (\d{{4}}))?\b(?! \d)", re.I), "month"),
    (re.compile(r"\b(?:in|during|since) (19\d{2}|20\d{2})\b", re.I), "year"),
]


def _resolve(kind: str, match: re.Match[str], ref: datetime) -> Period | None:
    text, groups = match.group(0), match.groups()
    if kind == "iso":
        day = date(int(groups[0]), int(groups[1]), int(groups[2]))
        return _days(day, 1, ref, text)
    if kind in ("month day year", "day month year"):
        name, day_text = (groups[0], groups[1]) if kind == "month day year" else (groups[1], groups[0])
        return _days(date(int(groups[2]), _month_number(name.lower()), int(day_text)), 1, ref, text)
    if kind == "ago":
        count = int(groups[0]) if groups[0].isdigit() else NUMBERS[groups[0].lower()]
        return _ago(count, groups[1].lower(), ref, text)
    if kind == "relative":
        return _relative(match, ref)
    if kind == "last weekday":
        return _last_weekday(groups[0].lower(), ref, text)
    if kind == "season":
        return _season(groups[1].lower(), groups[0].lower(), ref, text)
    if kind == "month":
        which, name, year = (groups[0] or "").lower(), groups[1].lower(), groups[2]
        if name == "may" and not which and not year:
            return None  # "may" alone is the verb far more often than the month
        period = _named_month(_month_number(name), int(year) if year else None, which, ref, text)
        return Period(period.start, _day(ref.date() + timedelta(days=1), ref), text) if which == "since" else period
    period = _months(int(groups[0]), 1, 12, ref, text)
    return (
        Period(period.start, _day(ref.date() + timedelta(days=1), ref), text)
        if text.lower().startswith("since")
        else period
    )


def period_in(question: str, reference: datetime) -> Period | None:
    """The period the question's first time expression names, or None when it names none."""
    found: list[tuple[int, str, re.Match[str]]] = []
    for pattern, kind in _PATTERNS:
        match = pattern.search(question)
        if match is not None:
            found.append((match.start(), kind, match))
    for _, kind, match in sorted(found, key=lambda f: f[0]):
        try:
            period = _resolve(kind, match, reference)
        except ValueError:  # a date that does not exist (February 30)
            continue
        if period is not None:
            return period
    return None


def dated(request: SearchRequest) -> SearchRequest | None:
    """The request filtered to the period its query names (`dates_in_query`), within its own
    start/end; unchanged when it does not ask or the query names no period; None when that period
    and its start/end do not meet (nothing can match)."""
    if not request.dates_in_query:
        return request
    period = period_in(request.query, request.reference_time or datetime.now(UTC))
    return request if period is None else narrowed_to(request, period)


def narrowed_to(request: SearchRequest, period: Period) -> SearchRequest | None:
    """The request over the period's records only, within its own start/end (None: they do not meet)."""
    given = request.filters
    start = max(filter(None, (given.start, period.start)))
    end = min(filter(None, (given.end, period.end - timedelta(microseconds=1))))  # end is inclusive
    if end < start:
        return None
    return request.model_copy(update={"filters": given.model_copy(update={"start": start, "end": end})})

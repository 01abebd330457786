"""Log records as structures: the JSON and logfmt forms a line reaches us in (journald's JSON and export formats, log
shippers' records, pretty-printed JSON field lines, Fluent Bit's stdout, logfmt) and the fields that hold a record's
message, program, host and stamps. `lines.normalise` decodes a line with these and parses the message it gives again
for its own envelope (docs/diagnosis.md, "Envelopes: how a line reaches us")."""

from __future__ import annotations

import json
import re

__all__ = ["ERROR_KEYS", "HOST_KEYS", "MAX_JSON", "MAX_LINE", "MESSAGE_KEYS", "MONO_KEYS", "NESTED_KEYS",
           "ORIGINAL_KEYS", "STAMP_KEYS", "cut_json", "export_to_json", "json_field", "json_text", "logfmt",
           "message_value", "record_ident", "tag_word", "with_cause"]

#: A JSON line is decoded up to this size (its message is then cut to MAX_LINE).
MAX_LINE = 4096  # longer lines are cut before matching: a 1 MB line costs no more than this
MAX_JSON = 64 << 10
#: One field line of pretty-printed JSON (journalctl -o json-pretty's `"MESSAGE" : "...",`, dmesg --json's
#: `"msg": "..."`, jq's output of a shipper's record).
_JSON_FIELD = re.compile(r'"(?:MESSAGE|message|msg|log|line|short_message|full_message|_raw|Message|textPayload'
                         r'|SyslogMessage)"[ \t]{0,8}:'
                         r'[ \t]{0,8}(?P<value>"(?:[^"\\]|\\.){0,65536}")[ \t]{0,8},?[ \t]{0,8}$')
#: Fluent Bit's stdout output (msgpack printed as `[0] TAG: [STAMP, {"log"=>"...", ...}]`, v2+ with
#: `[[STAMP, {metadata}], {...}]`): the record's message field.
_FLUENT_HEAD = re.compile(r'\[\d{1,9}\][ \t]+[\w.*/-]{1,128}:[ \t]+\[\[?\d{1,20}\.\d{1,9}[,\]]')
_FLUENT_KEYS = ('"log"=>"', '"message"=>"', '"msg"=>"', '"MESSAGE"=>"')
#: A JSON record that does not decode (cut by a paste, or longer than MAX_JSON): its message field's text so far.
_JSON_KEY = re.compile(r'[{,][ \t]{0,8}"(?:MESSAGE|message|msg|log|line|short_message|full_message|_raw|Message'
                       r'|textPayload|SyslogMessage)"'
                       r'[ \t]{0,8}:[ \t]{0,8}"')
_JOURNALD_MARKS = ('"__CURSOR"', '"_TRANSPORT"', '"SYSLOG_IDENTIFIER"', '"__REALTIME_TIMESTAMP"', '"_PID"')
_JSON_TEXT = re.compile(r'(?:[^"\\]|\\.){0,4096}')


def cut_json(text: str) -> str | None:
    """The message field of a JSON object that does not decode (its first 1 KiB names the field), or None."""
    if any(mark in text for mark in _JOURNALD_MARKS):
        return None       # a journald record that does not decode may be anyone's (logger's): it gives nothing
    key = _JSON_KEY.search(text, 0, 1024)
    if key is None:
        return None
    value = _JSON_TEXT.match(text, key.end())
    raw = value.group() if value else ""
    try:
        inner = json.loads('"' + raw + '"')
    except ValueError:
        return None
    return json_text(inner) if isinstance(inner, str) else None


def json_text(value: str) -> str:
    """A decoded JSON string without lone surrogates (`"\\ud800"` decodes to one; no UTF-8 can hold it)."""
    if value.isascii():
        return value
    return value.encode("utf-8", "replace").decode("utf-8")


def json_field(text: str) -> str | None:
    """The message of one pretty-printed JSON field line, or of a Fluent Bit stdout record; None otherwise."""
    if text[:1] == "[":
        if not _FLUENT_HEAD.match(text):
            return None
        for key in _FLUENT_KEYS:
            start = text.find(key)
            if start >= 0:
                start += len(key)
                stops = [i for i in (text.find('", "', start), text.find('"}', start)) if i >= 0]
                return text[start:min(stops)] if stops else None
        return None
    m = _JSON_FIELD.match(text)
    if m is None:
        return None
    try:
        value = json.loads(m.group("value"))
    except ValueError:
        return None
    return json_text(value) if isinstance(value, str) else None


#: A logfmt line (Go's logrus and slog, containerd, dockerd, kubelet): `time=... level=... msg="..."`.
_LOGFMT = re.compile(r'(?:time|ts|level|lvl)=(?:"[^"\n]{0,64}"|\S{0,64})'
                     r'(?:[ \t]+[\w.-]{1,32}=(?:"[^"\n]{0,64}"|[^\s"]{0,64})){0,8}?'
                     r'[ \t]+(?:msg|message)="(?P<msg>(?:[^"\\]|\\.){0,4096})"')


#: The cause such a line keeps apart from its message, after it: `err="..."` / `error="..."` (logrus's WithError, slog).
_LOGFMT_ERR = re.compile(r'[ \t](?:err|error)=(?:"(?P<q>(?:[^"\\]|\\.){1,4096})"|(?P<w>[^\s"]{1,256}))')


def _unescape(text: str) -> str:
    return re.sub(r'\\(["\\nt])', lambda e: {"n": " ", "t": " "}.get(e.group(1), e.group(1)), text)


def logfmt(text: str) -> tuple[str, str] | None:
    """A logfmt line's message (its `msg="..."` unescaped) and its cause (`err=`/`error=` after it, else ""), or None
    if TEXT is no logfmt line."""
    m = _LOGFMT.match(text)
    if m is None:
        return None
    e = _LOGFMT_ERR.search(text, m.end(), m.end() + 8192)
    return _unescape(m.group("msg")), _unescape(e.group("q") or e.group("w")) if e is not None else ""


#: JSON fields that hold the message, the host, the stamp, in the order they are tried. Besides the common ones:
#: OpenTelemetry's log record `body` (a string, or OTLP JSON's AnyValue `{"stringValue": ...}`), Splunk HEC's `event`
#: (a string; an object is the event one level down), Azure Monitor's container tables (`ContainerLog.LogEntry`,
#: `ContainerLogV2.LogMessage`), CloudWatch Logs Insights' `@message`.
MESSAGE_KEYS = ("MESSAGE", "message", "msg", "log", "line", "Message", "short_message", "full_message", "_raw",
                 "textPayload", "SyslogMessage", "body", "Body", "event", "LogEntry", "LogMessage", "@message")
#: A shipper's record that holds the event one level down: an Elasticsearch/OpenSearch hit's `_source`, Splunk's JSON
#: export (`{"preview":false,"result":{"_raw":...}}`, one result a line), Google Cloud Logging's `jsonPayload` (a
#: LogEntry's structured payload: the Ops Agent's syslog and journald receivers put the line or record there),
#: Datadog's log search API (`attributes`, v2 `data[]`; `content`, v1 `logs[]`).
NESTED_KEYS = ("_source", "result", "jsonPayload", "attributes", "content", "event", "fields")
#: A Go program's structured log (zap, logrus, slog, klog's JSON) keeps the cause apart from its message
#: (`{"msg":"failed to get RDMA stats","error":"..."}`): its text is read after the message, as the logger's console
#: encoder prints it.
ERROR_KEYS = ("error", "err", "errorVerbose", "exception")
#: Elastic Common Schema's raw line (`event.original`: "Raw text message of entire event"; `log.original`, its
#: deprecated name): the line with its own envelope and tag, read before `message`, which a pipeline may have cut.
ORIGINAL_KEYS = (("event", "original"), ("log", "original"))
#: A syslog record's program, where a shipper keeps it apart from the message: Fluent Bit's syslog parsers (`ident`,
#: `pid`), Vector's syslog source (`appname`, `procid`), rsyslog's property (`programname`), Azure Monitor's Syslog
#: table (`ProcessName`, `ProcessID`), ECS (`process.name`, `process.pid`; `log.syslog.appname`). A record of any
#: program but the kernel keeps it as a tag (`NAME[PID]: `, trust syslog), as journald's records do.
_IDENT_KEYS = ("ident", "appname", "programname", "ProcessName")
_PID_KEYS = ("pid", "procid", "ProcessID")
HOST_KEYS = ("_HOSTNAME", "hostname", "host", "HOSTNAME", "nodename", "Computer")
STAMP_KEYS = ("__REALTIME_TIMESTAMP", "_SOURCE_REALTIME_TIMESTAMP", "@timestamp", "timestamp", "time", "ts", "date",
               "TimeGenerated")
MONO_KEYS = ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP")


def record_ident(obj: dict[str, object]) -> tuple[object, object] | None:
    """A syslog record's (program, pid) where a shipper keeps them apart from its message (`_IDENT_KEYS`), or None."""
    name = next((obj[k] for k in _IDENT_KEYS if isinstance(obj.get(k), (str, int))), None)
    pid = next((obj[k] for k in _PID_KEYS if isinstance(obj.get(k), (str, int))), None)
    for outer, field in (("process", "name"), ("log", "syslog")):
        value = obj.get(outer)
        if name is None and isinstance(value, dict):
            if field == "syslog" and isinstance(value.get("syslog"), dict):
                value = value["syslog"]
                field = "appname"
            if isinstance(value.get(field), str):
                name = value[field]
                if outer == "process" and isinstance(value.get("pid"), (str, int)):
                    pid = pid if pid is not None else value["pid"]
    return None if name is None else (name, "0" if pid is None else pid)


def tag_word(value: object) -> str:
    text = re.sub(r"[^\w./-]", "_", str(value))[:64]
    return text or "_"


def export_to_json(data: bytes, limit: int = 1 << 20) -> bytes:
    """journald's export format (`journalctl -o export`: `KEY=value` lines, records separated by a blank line,
    binary fields as KEY, a 64-bit little-endian size and the bytes) -> one JSON record per line. Fields are cut
    to MAX_JSON; a record is one line, so the findings' line numbers count records."""
    out: list[bytes] = []
    record: dict[str, str] = {}
    pos, end = 0, len(data)
    while pos < end:
        stop = data.find(b"\n", pos)
        stop = end if stop < 0 else stop
        row = data[pos:stop]
        pos = stop + 1
        if not row:
            if record:
                out.append(json.dumps(record).encode())
                record = {}
            continue
        key, sep, value = row.partition(b"=")
        if not sep:                                   # a binary field: its size, then its bytes
            size = int.from_bytes(data[pos:pos + 8], "little") if pos + 8 <= end else 0
            value = data[pos + 8:pos + 8 + min(size, limit)]
            pos = min(end, pos + 8 + size + 1)
        name = key.decode("ascii", "replace")[:64]
        if len(record) < 256:
            record[name] = value[:MAX_JSON].decode("utf-8", "replace")
    if record:
        out.append(json.dumps(record).encode())
    return b"\n".join(out) + b"\n"


def message_value(value: object, key: str) -> object | None:
    """A message field's text: a string, journald's MESSAGE as a byte array, OTLP's AnyValue (`{"stringValue": ...}`);
    None for any other value (an ECS `event` or `log` object, a number) and for an `event` of one word (a record's
    type, `{"event": "line", "data": ...}`, not a HEC event's text)."""
    if isinstance(value, str):
        return value if key != "event" or " " in value.strip() else None
    if isinstance(value, dict) and isinstance(text := value.get("stringValue"), str):
        return text
    if isinstance(value, list) and value and all(isinstance(b, int) for b in value[:MAX_LINE]):
        return value
    return None


def with_cause(message: str, cause: str) -> str:
    """MESSAGE (its envelope already read), then a structured logger's CAUSE unless it is empty or the message already
    holds its start: the cause follows the message's own envelope and start, so its text can never become an envelope
    or hide the message."""
    message = message[:MAX_LINE].strip()
    cause = cause[:MAX_LINE]
    return f"{message}: {cause}"[:MAX_LINE].strip() if cause.strip() and cause[:64] not in message else message

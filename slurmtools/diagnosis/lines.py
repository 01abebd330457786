"""One log line -> envelope (stamps, host, facility and level, shipper tags, counts, file names) and message.

The parser does not enumerate prefixes: it walks the line from the left over envelope *elements* and stops where
the message starts: at a known subsystem tag (`NVRM:`, `mlx5_core`, `pcieport`, `EDAC`, `LustreError`, `nfs:`, ...:
`data/subsystems.toml`, read by `subsystems`), at a syslog `NAME[PID]:` tag (kept in the message: such a line is a
daemon's or anyone's, trust `syslog`), after `kernel:`, or at the first word that is no envelope element. Elements:

- stamps of every shape: `[  123.456789]` (mono), `[  +0.000844]` (--reltime), `[Jan11 09:52]` (-H), any bracketed
  date and time (`[Sun Jan 11 09:52:01 2026]`, `[mar. janv. 11 09:52:01 2026]`), ISO 8601 (`T` or blank, `,` or
  `.` fractions, zones), `2020/08/10 19:09:42`, `05/01/2024`, and date words before a time of day in any language
  (`Jan 11 09:52:01`, `janv. 11 09:52:01`, `11月 11 09:52:01`, `Tue Aug 12 16:40:43 2025`): a word is only an
  envelope word when a time of day follows it;
- `<4>` priorities (and RFC 5424's version), /dev/kmsg records (`4,1234,5678901,-;`), printk caller ids
  (`[  T291]`), skiboot's `[ 12.345,5]`, facility.level (`kern.crit`), dmesg -x's `kern  :warn  :`;
- a host before `kernel:` or before a `NAME[PID]:` tag (only after a stamp), `kernel:` itself, RFC 5424's nil
  fields (`kernel - - -`);
- shipper tags: CRI's stream and flag (`2024-05-01T10:00:00.123456789Z stderr F `), `[pod/NAME/CONTAINER]`,
  glog headers (`E0501 10:00:00.123456  1234 file.go:12] `);
- at the line's start only: a count (`uniq -c`, pasted line numbers), a file name from a grep across rotated logs
  (`/var/log/kern.log.1:`, `messages-20240501:`, with grep -n's line number), a pdsh/clush `host: ` or docker
  compose's `svc  | ` (when an envelope element or a subsystem tag follows), a busybox prompt (`/ # `), rsyslog's
  wall header (`Message from syslogd@HOST at Jan 11 09:52:01 ...`), journalctl -o verbose's `MESSAGE=`, a pasted
  list item, prompt or quote (`- `, `* `, `# `, `$ `, `1. `, `"`), the CFDR/loghub supercomputer logs' record head
  (`- 1131566461 2005.11.09 dn228 `, then syslog, or BlueGene/L's `2005-06-03-15.42.50.675872 LOC RAS KERNEL INFO`);
- after a stamp only: a lower-case level word (`error: `, `warning: `; not `info:`);
- MPI and launcher rank tags: `0: ` (srun --label), `[1,0]<stderr>:` (Open MPI, PRRTE's `[prterun-h-1@1,0]`),
  `[0]<stderr>:` (horovodrun), `[0] ` (MPICH/Intel MPI -prepend-rank), `[rank0]:`, `[default0]:`, Ray's `(pid=N)`;
- Python loggers' headers: `ERROR:root:` (basicConfig), after a stamp `- NAME - ERROR - `, `[ERROR]`, a source
  location `[file.py:12:func]`, Ray's `ERROR file.py:12 -- `, vLLM's `ERROR 01-11 09:52:01 `;
- BMC SEL exports' `|` separators, ipmitool's hexadecimal record ids and `Pre-Init |0000000012|`; a report's message
  field (`Description:`, `Message = `, `Message:(combined from similar events):`);
- at the line's start, Ansible's oneline callback (`node | CHANGED | rc=0 | (stdout) `) and ClusterShell's folded node
  sets (`gpu[017-018]: `); after a stamp, slurmstepd's step id in slurmd.log (`[1234.batch]`).

ANSI escapes (colours and erase-line of dmesg/grep --color=always, a serial-over-LAN screen's cursor moves), their
`cat -v` form (`^[[0;32m`) and a serial console's carriage returns are removed before anything else. DRM's caller tag
is read in its usual form (`drm_caller`): `[drm:amdgpu_device_init.cold] *ERROR*` of a built-in driver or a function
the compiler split reads as `[drm:amdgpu_device_init [amdgpu]] *ERROR*`. One field line of
pretty-printed JSON (journalctl -o json-pretty, dmesg --json, jq) and Fluent Bit's stdout records
(`[0] TAG: [STAMP, {"log"=>"..."}]`) give their message field, parsed again; journalctl -o json-sse's `data: ` is
skipped; an Elasticsearch hit's `_source` is the document. A /dev/kmsg record's `\x09` and `\x0a` escapes are blanks.

After `kernel:` only stamps may follow (`kernel: [ 123.4] NVRM: ...`): nothing after the envelope's end is ever
skipped, so text a job controls (a process name) can only be the start of the message, never hidden behind an
element. Structured sources are decoded as structures: journald JSON (`journalctl -o json`: a kernel record's
MESSAGE; any other record becomes `IDENTIFIER[PID]: MESSAGE`, trust syslog) and JSON log lines with a
`message`/`MESSAGE`/`msg`/`log`/`line` field (Docker, Fluent Bit, Loki; GELF's `short_message`, Google Cloud Logging's
`textPayload`, Azure's `SyslogMessage`/`LogEntry`/`LogMessage`, Splunk's `_raw` and HEC `event`, OpenTelemetry's
`body`, ECS's `event.original`; one level down in `_source`, `result`, `jsonPayload`, `attributes`, `content`, `event`,
`fields`; a structured logger's `error`/`err` read after its message), whose text is parsed again for its own envelope
(a record whose program is kept apart, `ident`/`appname`/`ProcessName`/`process.name`, is the kernel's only when that
program is `kernel`: any other becomes `NAME[PID]: MESSAGE`, as journald's); journald's export format is turned into
such records by `kernel.scan` (`export_to_json`). A logfmt line (Go's logrus/slog as containerd, dockerd and kubelet
write: `time=... level=... msg="..."`) gives its unescaped `msg`, parsed again, then its `err=`/`error=`.
rsyslog's escapes of control characters in a message (`#011` tab, `#012` newline) are blanks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from slurmtools.diagnosis.records import (
    ERROR_KEYS,
    HOST_KEYS,
    MAX_JSON,
    MAX_LINE,
    MESSAGE_KEYS,
    MONO_KEYS,
    NESTED_KEYS,
    ORIGINAL_KEYS,
    STAMP_KEYS,
    cut_json,
    json_field,
    json_text,
    logfmt,
    message_value,
    record_ident,
    tag_word,
    with_cause,
)
from slurmtools.diagnosis.subsystems import ANY_TAG, TAG_SOURCE, TASK_FIRST

__all__ = ["MAX_JSON", "MAX_LINE", "TASK_FIRST", "Line", "normalise", "pci"]

#: Envelope elements read at most (a line of a thousand stamps costs no more than this).
MAX_ELEMENTS = 16

_TAGS = TAG_SOURCE
_TIME = r"\d{1,2}:\d\d:\d\d(?:[.,]\d{1,9})?"
_DATEWORD = (r"(?:[^\W\d_]{1,12}\.?,?|\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|\d{1,4}[年月월](?:\d{1,2}[日일])?|\d{1,2}[日일]"
             r"|\d{1,4}[.,]?)")
#: A zone or meridiem after the time; a meridiem glued to a lower-case message (a web console's stamp column copied with
#: its row, Rancher's "5/11/2016 9:46:04 PMmount.nfs: ...") ends the stamp there.
_ZONE = (r"(?:[ \t]+(?:AM|PM|am|pm|\d{4}|UTC|GMT|MSK|[A-Z]{1,3}[SD]?T|[+-]\d\d:?\d\d)(?=[ \t\]]|$)"
         r"|[ \t]+[AP]M(?=[a-z/]))")
_FACILITY = r"(?:kern|user|daemon|syslog|local\d|auth|authpriv|mail|cron|lpr|news|uucp|ftp)"
_LEVEL = r"(?:emerg|alert|crit|err|error|warn|warning|notice|info|debug)"

#: No-break spaces (U+00A0, the narrow U+202F, the figure space U+2007) as a browser copies them from a page's log:
#: plain spaces, so that a column or a rule's words read the same.
_NO_BREAK_SPACES = str.maketrans({"\xa0": " ", "\u202f": " ", "\u2007": " "})

#: Elements a stamp may be (anywhere in the envelope, also after `kernel:`).
_STAMPS = (
    r"(?P<prio><\d{1,3}>)(?:1(?=[ \t]))?",
    r"(?P<kmsg>\d{1,3}),\d{1,20},(?P<usec>\d{1,20}),[^;\s]{0,64};",
    r"\[[ \t]{0,20}(?P<mono>\d{1,10}\.\d{1,9})(?:,\d{1,2})?\]",
    r"\[[ \t]{0,20}[+-]\d{1,10}\.\d{1,9}\]",
    r"\[[ \t]{0,20}(?:(?P<mono3>\d{1,10}\.\d{1,9})[ \t]{1,20})?<[ \t]{0,20}\d{1,10}\.\d{1,9}>\]",   # dmesg -d
    r"\[[ \t]{0,8}[TC]\d{1,7}\]",
    "\ufeff",                      # RFC 5424 6.4: a UTF-8 MSG begins with the byte order mark
)
#: Elements of an absolute stamp and the rest of the envelope (not after `kernel:`).
_DATES = (
    r"\[(?P<bstamp>[^\[\]\n]{0,60}?\d{1,2}:\d\d(?:[^\[\]\n]{0,30}?))\]:?",
    r"(?P<epoch>\d{9,10}\.\d{1,9})(?=[ \t])",                                 # journalctl -o short-unix
    r"\{(?:[ \t]{0,4}[\w.-]{1,64}=\"[^\"\n]{0,256}\",?){1,32}[ \t]{0,4}\}",          # Loki's label set
    # BlueGene/L's RAS record: stamp, location, `RAS <component> <severity>`
    r"(?P<bgl>\d{4}-\d\d-\d\d-\d\d\.\d\d\.\d\d\.\d{1,6})[ \t]+[\w:.-]{1,64}[ \t]+RAS[ \t]+[A-Z]{2,12}[ \t]+"
    r"(?:INFO|WARNING|SEVERE|ERROR|FATAL|FAILURE)(?=[ \t])",
    rf"(?P<iso>\d{{4}}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d{{1,9}})?)?(?:Z|[+-]\d\d:?\d\d)?{_ZONE}?)",
    rf"(?P<slash>(?:\d{{4}}/\d\d/\d\d|\d\d/\d\d/\d{{2,4}})(?:[ \t]+{_TIME}{_ZONE}?)?)",
    # FreeIPMI ipmi-sel's `Jan-11-2024` (its SEL rows: `ID | Date | Time | Name | Type | Event`)
    r"(?P<mdy>[A-Z][a-z]{2}-\d\d-\d{4})(?=[ \t])",
    rf"(?P<dt>(?:{_DATEWORD}[ \t]+){{0,4}}{_TIME}{_ZONE}{{0,3}})",
    r"(?P<glog>[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9}[ \t]+\d{1,10} [\w.-]{1,64}:\d{1,6}\])",
    # client-go's event recorder (record/event.go: `Event(%#v): type: '%v' reason: '%v' %v`) and
    # node-problem-detector's status log (`New status generated: &{Source:... Events:[{... Reason:R Message:`)
    r"Event\(v1\.ObjectReference\{[^{}\n]{0,1000}\}\): type: '\w{1,16}' reason: '\w{1,64}'",
    r"New status generated: &\{Source:[\w-]{1,64} Events:\[\{Severity:\w{1,16} Timestamp:[^{}\[\]\n]{0,120}? "
    r"Reason:\w{1,64} Message:",
    rf"{_FACILITY}\.{_LEVEL}",
    rf"{_FACILITY}[ \t]*:[ \t]*{_LEVEL}[ \t]*:",
    r"(?:EMERG|ALERT|CRIT|ERR|WARN|NOTICE|DEBUG):(?=[ \t])",              # a level word (not INFO: or WARNING:, which
                                                                         # begin kernel messages: hung tasks, splats)
    r"(?:stdout|stderr)[ \t]+[FP](?=[ \t])",
    r"\[pod/[^\]\s]{1,253}\]",
    r"\[(?:[\w.-]{1,64}@)?\d{1,6}(?:,\d{1,6})?\]<std(?:out|err)>:",
    # ipmitool sel list's pre-init stamp (`Pre-Init  |0000000012|`)
    r"Pre-Init[ \t]*\|[ \t]*\d{1,10}[ \t]*",
    # Python's logging.basicConfig default `%(levelname)s:%(name)s:` (no blank after the level's colon: the
    # kernel's own `WARNING: CPU: 0 PID: ...` and `INFO: task ...` have one)
    r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG):[\w.<>-]{1,128}:",
    r"\[(?:rank|default)\d{1,6}\]:",
    r"\d{1,10}\.\d{3,9}\|",                 # OpenPOWER hostboot's console: seconds since its start, `  16.91730|`
    r"\d{1,6}:(?=[ \t])",
    r"\|",
    r"(?P<kernel>kernel)(?::|(?:[ \t]+(?:-|\d{1,10})){2}[ \t]+(?:-|(?:\[[^\]\n]{0,500}\]){1,8}))",
)
#: A host: only before `kernel` or a `NAME[PID]:` tag (which stays in the message), never after `kernel:`.
_HOST = (rf"(?!{_FACILITY}\.{_LEVEL}[ \t])(?P<host>[\w.@*-]{{1,64}}(?:/[\w.@*-]{{1,64}})?)"
         rf"(?=[ \t]+(?:{_FACILITY}\.{_LEVEL}[ \t]+)?kernel(?::|[ \t]+-)"
         r"|[ \t]+[\w./-]{1,64}\[\d{1,10}\]: )")
#: A file name that is a program's source (C, C++, CUDA, Python, Go, Rust, Fortran): `path.cu:579:` before a message is
#: where the program stood when it printed it, part of the message.
_NOT_SOURCE = r"(?![\w.@+-]{0,64}\.(?:c|cc|cu|cuh|cpp|cxx|h|hh|hpp|py|go|rs|f90|F90)(?::|[ \t]))"
#: At the line's start only.
_START = (
    r"/ # ",
    r"(?:>[ \t]*)+(?=\S)",                                                # a mail or forum quote: `> > Dec  1 ...`
    r"[\w.-]{1,64} login:",                                               # a serial console's getty prompt
    # `kubectl describe` events (node-problem-detector's kernel-monitor): type, reason, age, from, then the message
    r"(?:Normal|Warning)[ \t]+[A-Za-z]\w{0,63}[ \t]+(?:\d+[smhd][\dsmhd]*|<unknown>)(?:[ \t]+\(x\d+ over \w+\))?"
    r"[ \t]+[\w.-]{1,64}(?:,[ \t]*[\w.-]{1,253})?[ \t]{2,}(?:\(combined from similar events\):)?",
    # (a source file's `path.cu:579: ` is a program's location in its own message, an assert's or an abort's: not a file
    # name a grep put in front)
    rf"(?P<file>/(?:[\w.@+-]{{1,64}}/){{0,16}}{_NOT_SOURCE}[\w.@+-]{{1,64}}(?::\d{{1,10}})?:"
    rf"|(?:[\w.@+-]{{1,64}}/){{1,16}}{_NOT_SOURCE}[\w@+-]{{0,64}}\.[\w.@+-]{{1,64}}(?::\d{{1,10}})?:"
    r"|(?:kern|syslog|messages|dmesg|daemon|kernel|console|warn|all)(?:\.log)?(?:[.-][\w.-]{1,32})?(?::\d{1,10})?:"
    r"|[\w.@+-]{1,64}\.(?:log|txt|out|err)(?:\.\d{1,4})?(?:\.gz)?(?::\d{1,10})?:)",
    r"\d{1,9}(?:[ \t]+|(?=\[))",
    # grep -n's line number (`-` on a context line) before a stamp: `1234:Jan 11 09:52:01 host kernel: ...`
    rf"\d{{1,9}}[:-](?=\[|<\d|\d{{4}}-\d\d-\d\d[T ]|(?:{_DATEWORD}[ \t]+){{1,4}}\d{{1,2}}:\d\d:\d\d)",
    # rsyslog's wall message to logged-in users (omusrmsg): `Message from syslogd@HOST at Jan 11 09:52:01 ...`
    rf"Message from syslogd@(?P<wall>[\w.-]{{1,64}}) at (?:{_DATEWORD}[ \t]+){{0,4}}{_TIME}(?:[ \t]+\.\.\.)?",
    r"MESSAGE=",                                                          # journalctl -o verbose's field line
    # logrus's text formatter on a terminal (docker's CLI, Go daemons): a four-letter level and the seconds since start
    # or the full stamp, `ERRO[0006] ...`, `WARN[2024-01-02T10:00:00Z] ...`
    r"(?:PANI|FATA|ERRO|WARN|INFO|DEBU|TRAC)"
    r"\[(?:\d{4,10}|\d{4}-\d\d-\d\d[T ][\d:.]{5,18}(?:Z|[+-]\d\d:?\d\d)?)\](?=[ \t])",
    # a report's message field: racadm getsel's `Description:`, racadm lclog's `Message         = `, kube-eventer's
    # `Message:(combined from similar events): `
    r"(?:Message|Description)[ \t]{0,32}[:=](?:[ \t]*\(combined from similar events\):)?",
    # ipmitool sel list's record id (`printf("%4x | ")`: hexadecimal)
    r"[0-9a-fA-F]{1,6}[ \t]+\|",
    # MPICH/Intel MPI's -prepend-rank / -l `[0] `; Ray's worker prefix `(pid=1234)`, `(Actor pid=1234, ip=10.0.0.1)`
    r"\[\d{1,6}\](?=[ \t])",
    r"\((?:[\w.:-]{1,64}[ \t]+)?pid=\d{1,10}(?:,[ \t]*ip=[\w.:-]{1,64})?(?:,[ \t]*node_id=\w{1,64})?\)",
    # vLLM's logger: `ERROR 01-11 09:52:01 [file.py:12] ` (`%(levelname)s %(asctime)s`, date format `%m-%d %H:%M:%S`)
    r"(?P<lvstamp>(?:CRITICAL|ERROR|WARNING|INFO|DEBUG)[ \t]+\d\d-\d\d[ \t]+\d\d:\d\d:\d\d(?:\.\d{1,6})?)",
    # `kubectl get events`: age, type, reason, object, then the message
    r"(?:\d+[smhd][\dsmhd]*|<unknown>)[ \t]+(?:Normal|Warning)[ \t]+[A-Za-z]\w{0,63}[ \t]+"
    r"(?:node|pod)/[\w.-]{1,253}[ \t]+",
    # the Usenix CFDR/loghub supercomputer logs (BlueGene/L, Thunderbird, Spirit, Liberty): an alert tag or `-`, the
    # epoch, the date and the node before the line as the node logged it
    r"(?:-|[A-Z][A-Z0-9_]{1,31})[ \t]+\d{9,10}[ \t]+\d{4}\.\d\d\.\d\d[ \t]+(?P<loghub>[\w.:@/-]{1,64})[ \t]+",
    r"(?:[-*\u2022#$]|\d{1,3}[.)])[ \t]+(?=\S)",                          # a pasted list item or shell prompt
    r"[\"'`](?=\S)",                                                     # a quoted line
    # Ansible's oneline callback (plugins/callback/oneline.py: `%s | %s | rc=%s | (stdout) %s`, the output's newlines
    # as `\n`): the host, the status and the return code before the command's output
    r"(?P<ansible>[\w.-]{1,64})[ \t]+\|[ \t]+(?:CHANGED|SUCCESS|FAILED!?|UNREACHABLE!?)[ \t]+\|[ \t]+rc=-?\d{1,4}"
    r"[ \t]+\|[ \t]+\((?:stdout|stderr)\)",
    # pdsh's `host: `, compose's `svc  | ` (not libibmad's `ibwarn: [PID] function: `, a message of its own, nor an old
    # oops's instruction pointer, `IP: [<ffffffffa14e85b1>] osp_statfs+0x2a1/0x4e0 [osp]`, nor Intel VT-d's fault
    # report, `DMAR: [DMA Read] Request device [af:00.1] ...`); clush -bL names a node set
    # (ClusterShell's folded `gpu[017-018,020]: `: a range or a list, never one number, which is a syslog tag's PID,
    # `rpc.idmapd[700]: `, kept in the message)
    rf"(?!ib(?:warn|error|panic):|[RE]?IP:[ \t]+\[<|DMAR:[ \t]+\[)"
    rf"(?P<pdsh>[\w.-]{{1,64}}(?:\[\d{{1,16}}[-,][\d,-]{{1,128}}\][\w.-]{{0,64}}){{0,4}})"
    rf"(?::|[ \t]*\|)[ \t]+"
    rf"(?=\[|<\d|\d{{4}}-\d\d-\d\d|\d{{1,3}},\d+,\d+,|kernel:|{_FACILITY}[ \t]*:"
    rf"|(?:{_DATEWORD}[ \t]+){{1,4}}\d{{1,2}}:\d\d:\d\d|(?:{_TAGS}))",
)


def _compile(*parts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(p for group in parts for p in group) + r")[ \t]*")


#: After a stamp only: a level word in lower case (`ras-mc-ctl --errors`' `1 2024-05-01 10:00:00 +0200 error: `, Go and
#: Python loggers' `... warning: `); not `info:`, and never at a line's start, where it may begin a message.
_PY_LEVEL = r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)"
_LEVEL_AFTER_STAMP = (
    r"(?:emerg|alert|crit|critical|err|error|warn|warning|notice|debug):(?=[ \t])",
    # slurmstepd's lines in slurmd.log: its step id after the stamp (Slurm's `%ps` format of a step id: `[1234.batch]`,
    # `[1234.extern]`, `[1234.0]`, an array task's `[1234_7.0]`, a het job's `[1234+1.0]`)
    r"\[\d{1,10}(?:[_+]\d{1,10})?\.(?:\d{1,6}|batch|extern|interactive|TBD)\]",
    # Python logging's `%(asctime)s - %(name)s - %(levelname)s - ` (the logging cookbook's format), `... - ERROR - `
    rf"-[ \t]+(?:[\w.<>-]{{1,128}}[ \t]+-[ \t]+)?{_PY_LEVEL}[ \t]+-(?=[ \t])",
    # DeepSpeed's and others' `[ERROR]`, a source location `[engine.py:12:step]` / `[worker.py:12]` (a compiled
    # source with its path, gloo's `[../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error`, is where the
    # program stood in its own message, kept as `path.cu:579:` is)
    rf"\[{_PY_LEVEL}\]",
    r"\[(?:[\w./-]{1,128}\.py|[\w.-]{1,128}\.(?:cc|cpp|cu|c|h|go|rs)):\d{1,6}(?::\w{1,64})?\]",
    # Ray's `%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- `
    rf"{_PY_LEVEL}[ \t]+[\w./-]{{1,128}}:\d{{1,6}}[ \t]+--(?=[ \t])",
)
_AT_START = _compile(_STAMPS, _DATES, _START, (_HOST,))
_STAMPED = _compile(_STAMPS, _DATES, _LEVEL_AFTER_STAMP, (_HOST,))
_IN_KERNEL = _compile(_STAMPS)
_HOST_FIRST = _compile((_HOST,))


@dataclass
class Line:
    number: int          # 1-based line number in the input
    message: str         # the message without its envelope
    stamp: str | None    # the timestamp as printed
    mono: float | None   # monotonic seconds, when the format has them
    host: str | None


def normalise(raw: str, number: int = 0, *, after_stamp: bool = False, structured: bool = True) -> Line:
    """RAW's envelope and message. AFTER_STAMP: RAW is what follows a stamp already split off (no line-start
    elements then). STRUCTURED: a JSON line is decoded (not inside a JSON line's own message)."""
    text = raw.rstrip("\r\n")
    if "#01" in text:
        text = _RSYSLOG_ESCAPE.sub(" ", text)
    if "\x1b" in text:
        text = _ANSI.sub("", text[:MAX_JSON])
    if "^[[" in text or text[-2:] == "^M":
        text = _CARET.sub("", text[:MAX_JSON])
    if "\r" in text:                                 # a serial console's carriage returns
        text = text.replace("\r", " ")
    if "\xa0" in text or "\u202f" in text or "\u2007" in text:   # a web page's no-break spaces, pasted with it
        text = text.translate(_NO_BREAK_SPACES)
    head = text.lstrip()
    if head[:1] in '"[' and structured and not after_stamp:
        field = json_field(head[:MAX_JSON])
        if field is not None:
            return normalise(field[:MAX_LINE], number, structured=False)
    if head[:6] == "data: " and head[6:7] == "{":    # journalctl -o json-sse: `data: {...}`
        head = head[6:]
    if head[:1] in "tl" and structured and not after_stamp:
        record = logfmt(head[:MAX_JSON])
        if record is not None:
            line = normalise(record[0][:MAX_LINE], number, structured=False)
            return Line(line.number, with_cause(line.message, record[1]), line.stamp, line.mono, line.host)
    if head[:1] == "{" and structured and not after_stamp:
        decoded = _structured(head[:MAX_JSON], number)
        if decoded is not None:
            return decoded
        cut = cut_json(head)
        if cut is not None:
            return normalise(cut, number, structured=False)
    text = text[:MAX_LINE]
    stamp: str | None = None
    mono: float | None = None
    host: str | None = None
    pos, end = len(text) - len(text.lstrip()), len(text)
    state = _STAMPED if after_stamp else _AT_START
    for _ in range(MAX_ELEMENTS):
        if pos >= end:
            break
        # a host before `kernel` or a `NAME[PID]:` tag is one whatever it spells (a node named nvme01); otherwise a
        # subsystem's tag is where the message starts
        m = _HOST_FIRST.match(text, pos) if state is not _IN_KERNEL else None
        if m is None:
            if ANY_TAG.match(text, pos):
                break
            m = state.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        groups = m.groupdict()
        if groups.get("kernel"):
            state = _IN_KERNEL
            continue
        if groups.get("mono") or groups.get("mono3"):
            mono = float(groups["mono"] or groups["mono3"])
            stamp = stamp or groups["mono"] or groups["mono3"]
        elif groups.get("usec"):
            mono = int(groups["usec"]) / 1e6
            stamp = stamp or f"{mono:.6f}"
            if "\\x0" in text:
                text = text[:pos] + _KMSG_ESCAPE.sub(" ", text[pos:])
                end = len(text)
        for key in ("iso", "dt", "bstamp", "slash", "glog", "epoch", "bgl", "lvstamp", "mdy"):
            if groups.get(key):
                stamp = groups[key].strip() if stamp is None or _is_mono(stamp, mono) else stamp
                break
        if groups.get("host"):
            host = groups["host"]
        elif groups.get("pdsh") or groups.get("wall") or groups.get("loghub") or groups.get("ansible"):
            host = host or groups["pdsh"] or groups["wall"] or groups["loghub"] or groups["ansible"]
        if state is _AT_START and any(groups.get(k) for k in ("mono", "mono3", "iso", "dt", "bstamp", "slash", "usec",
                                                              "prio", "epoch", "bgl", "lvstamp", "mdy")):
            state = _STAMPED
    message = text[pos:].strip()
    if message[:5] == "[drm:":
        message = drm_caller(message)
    return Line(number, message, stamp, mono, host)


#: DRM's caller tag (`[drm:FUNCTION [MODULE]] *ERROR* ...`, drm_print.c): a function the compiler split or cloned
#: carries its suffix (`amdgpu_device_init.cold`, `mes_v11_0_submit_pkt_and_poll_completion.constprop.0`), and a driver
#: built into the kernel (Talos, some distributions' kernels) prints no `[MODULE]`.
_DRM_CALLER = re.compile(r"\[drm:(\.?[A-Za-z_]\w{0,100}?)((?:\.(?:cold|isra|constprop|part|localalias)(?:\.\d+)?){0,4})"
                         r"(?: \[(\w{1,40})\])?\] ")
#: A built-in driver's module, from its functions' prefixes (the drivers whose lines the rules read).
_DRM_MODULES = (
    (re.compile(r"\.?(?:amdgpu|kfd|gfx_v|gmc_v|sdma_v|psp_|smu_|smu\d|vcn_v|jpeg_v|mes_v|uvd_v|vce_v|dce_v|ih_v|nbio_v|"
                r"df_v|hdp_v|umc_v|mmhub_v|gfxhub_v|athub_v|soc15|nv_common|vi_common|dm_|amdgpu_dm)"), "amdgpu"),
    (re.compile(r"\.?(?:radeon|r100_|r300_|r420_|r520_|r600_|rv\d+_|rs\d+_|evergreen_|cik_|si_|ni_|cayman_)"),
     "radeon"),
    (re.compile(r"\.?(?:i915|intel_|__i915|gen\d+_|icl_|tgl_|skl_|hsw_|bdw_|chv_|vlv_|ilk_|g4x_|guc_|huc_)"), "i915"),
    (re.compile(r"\.?(?:xe_)"), "xe"),
    (re.compile(r"\.?(?:nouveau|nvkm_)"), "nouveau"),
    (re.compile(r"\.?nv_drm_"), "nvidia_drm"),
)


def drm_caller(message: str) -> str:
    """MESSAGE with DRM's caller tag in its usual form: a compiler suffix dropped, a built-in driver's module named
    (from the function's prefix), so that `[drm:amdgpu_device_init.cold] *ERROR* ...` reads as the rules know it,
    `[drm:amdgpu_device_init [amdgpu]] *ERROR* ...`. Any other message is returned as it is."""
    m = _DRM_CALLER.match(message)
    if m is None:
        return message
    function, suffix, module = m.group(1), m.group(2), m.group(3)
    if module is None:
        module = next((name for prefix, name in _DRM_MODULES if prefix.match(function)), None)
        if module is None:
            return message if not suffix else f"[drm:{function}] {message[m.end():]}"
    elif not suffix:
        return message
    return f"[drm:{function} [{module}]] {message[m.end():]}"


#: ANSI escapes: SGR and erase-line (dmesg --color=always, grep --color=always, journalctl's colours) and every other
#: CSI sequence, charset selection and keypad mode (ECMA-48 5.4: `ESC [`, parameters, intermediates, a final byte; a
#: BIOS or console screen over `ipmitool sol activate` or conserver moves the cursor: `ESC[24;1H`, `ESC[2J`, `ESC[?25l`,
#: `ESC(B`, `ESC=`).
_ANSI = re.compile(r"\x1b(?:\[[0-9;?]{0,32}[ -/]{0,2}[@-~]|[()][0-9A-Za-z]|[=>78])")
#: The same SGR sequences as `cat -v` (and `less` without -R) print them: `^[[0;37m`; cat -v's `^M` at a line's end.
_CARET = re.compile(r"\^\[\[[0-9;]{0,32}[mK]|\^M$")
#: /dev/kmsg escapes a non-printable byte as `\xNN` (Documentation/ABI/testing/dev-kmsg): a tab or newline is a blank.
_KMSG_ESCAPE = re.compile(r"\\x0[9a]")


#: rsyslog's escapes of a control character received in a message (`#011` a tab, `#012` a newline): blanks.
_RSYSLOG_ESCAPE = re.compile(r"#01[12]")
def _is_mono(stamp: str, mono: float | None) -> bool:
    return mono is not None and stamp.replace(".", "", 1).isdigit()


def _structured(text: str, number: int) -> Line | None:
    """A JSON line -> Line, or None if it is not a JSON object with a message."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    top: dict[str, object] = obj
    if not any(message_value(obj[k], k) is not None for k in MESSAGE_KEYS if k in obj):
        # the event one level down (`_source`, `result`, a HEC `event` object, tracing's `fields`, ...)
        obj = next((obj[k] for k in NESTED_KEYS if isinstance(obj.get(k), dict)), obj)
    message: object = next((v for k in MESSAGE_KEYS if k in obj and (v := message_value(obj[k], k)) is not None),
                           None)
    original = next((obj[a][b] for a, b in ORIGINAL_KEYS if isinstance(obj.get(a), dict)
                     and isinstance(obj[a].get(b), str)), None) or next(
        (obj[f"{a}.{b}"] for a, b in ORIGINAL_KEYS if isinstance(obj.get(f"{a}.{b}"), str)), None)
    if original is not None:
        message = original
    if isinstance(message, list) and all(isinstance(b, int) and 0 <= b < 256 for b in message[:MAX_LINE]):
        message = bytes(message[:MAX_LINE]).decode("utf-8", "replace")   # journald's non-UTF-8 MESSAGE
    if not isinstance(message, str):
        return None
    cause: str = "" if original is not None else next(
        (json_text(v[:MAX_LINE]) for k in ERROR_KEYS if isinstance(v := obj.get(k), str) and v.strip()), "")
    message = json_text(message)
    host = next((json_text(h) for o in (obj, top) for k in HOST_KEYS if isinstance(h := o.get(k), str)), None)
    for outer, field in (("kubernetes", "host"), ("host", "name"), ("host", "hostname")):   # Fluent Bit, ECS
        value = obj.get(outer)
        if host is None and isinstance(value, dict) and isinstance(value.get(field), str):
            host = json_text(value[field])
    stamp = next((json_text(str(o[k])) for o in (obj, top) for k in STAMP_KEYS
                  if isinstance(o.get(k), (str, int, float))), None)
    mono_raw = next((obj[k] for k in MONO_KEYS if isinstance(obj.get(k), (str, int))), None)
    mono = None
    if (isinstance(mono_raw, int) and 0 <= mono_raw < 10**19) or (
            isinstance(mono_raw, str) and mono_raw.isascii() and mono_raw.isdigit() and len(mono_raw) <= 19):
        mono = int(mono_raw) / 1e6            # microseconds; a value out of range is no stamp
    if "_TRANSPORT" in obj or "SYSLOG_IDENTIFIER" in obj:
        # journald: the kernel's own record, or a daemon's (or logger's) line, which keeps its tag: trust syslog
        if obj.get("_TRANSPORT") != "kernel":
            ident = obj.get("SYSLOG_IDENTIFIER") or obj.get("_COMM") or "unknown"
            pid = obj.get("SYSLOG_PID") or obj.get("_PID") or "0"
            message = f"{tag_word(ident)}[{tag_word(pid)}]: {message}"
            return Line(number, with_cause(message, cause), stamp, mono, host)
        inner = normalise(message[:MAX_LINE], number, after_stamp=True)
    elif original is None and (ident := record_ident(obj)) is not None:
        # a syslog record with its program apart: the kernel's message, or any other program's behind its tag
        if ident[0] != "kernel":
            message = f"{tag_word(ident[0])}[{tag_word(ident[1])}]: {message}"
            return Line(number, with_cause(message, cause), stamp, mono, host)
        inner = normalise(message[:MAX_LINE], number, after_stamp=True)
    else:
        inner = normalise(message[:MAX_LINE], number, structured=False)  # a shipped line keeps its own envelope
    return Line(number, with_cause(inner.message, cause), inner.stamp or stamp,
                inner.mono if inner.mono is not None else mono, inner.host or host)


_PCI_RE = re.compile(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?")


def pci(text: str | None) -> str | None:
    """Normalise a PCI address: `0000:3B:00.0`, `3b:00`, `PCI:0000:3b:00` -> `0000:3b:00`."""
    if not text:
        return None
    m = _PCI_RE.search(text)
    if not m:
        return text.strip() or None
    domain = (m.group(1) or "0000")[-4:]
    return f"{domain}:{m.group(2)}:{m.group(3)}".lower()

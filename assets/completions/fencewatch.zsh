#compdef fencewatch

autoload -U is-at-least

_fencewatch() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_fencewatch_commands" \
"*::: :->fencewatch" \
&& ret=0
    case $state in
    (fencewatch)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-command-$line[1]:"
        case $line[1] in
            (serve)
_arguments "${_arguments_options[@]}" : \
'--listen=[Address to listen on; port 0 picks a free port (printed on the first line of stdout)]:LISTEN:_default' \
'--database=[\`sqlite\://PATH\` (created on first start) or \`postgres\://USER@HOST/DB\`]:DATABASE:_default' \
'--schema=[PostgreSQL\: keep the daemon'\''s tables in this schema, created if missing, instead of the connection'\''s first (\`public\`); every daemon sharing the fence gives the same one]:NAME:_default' \
'--max-value-bytes=[The largest value a write may carry, in bytes]:MAX_VALUE_BYTES:_default' \
'--idempotency-retention=[How long an accepted operation'\''s result is kept for replay by its Idempotency-Key (e.g. 24h, 90m; default 24h). A retry after that is decided afresh; see the README. A setting of the database\: the first daemon on it stores it, later ones keep to the stored value (see --set-retention)]:IDEMPOTENCY_RETENTION:_default' \
'--db-max-connections=[PostgreSQL connections per daemon]:DB_MAX_CONNECTIONS:_default' \
'*--etcd=[etcd endpoints (comma-separated \`http\://HOST\:PORT\`)\: writes may then name an etcd lock as their authority (\`Fencing-Lease\: etcd\:PREFIX\`, the lock'\''s create revision as the token), checked against etcd within --db-timeout]:ETCD:_default' \
'*--zookeeper=[ZooKeeper servers (comma-separated \`HOST\:PORT\`)\: writes may then name a ZooKeeper lock as their authority (\`Fencing-Lease\: zk\:/PATH\`, the czxid of the caller'\''s lock node as the token), checked against ZooKeeper (after a \`sync\`) within --db-timeout]:ZOOKEEPER:_default' \
'--lease-scope=[Which resources a lease'\''s tokens may fence]:LEASE_SCOPE:((any\:"A lease'\''s tokens may fence any resource"
prefix\:"Lease L'\''s tokens may fence only resources L and L/…"))' \
'--config=[Configuration file (TOML)\: alert rules and receivers; see assets/fencewatch.example.toml]:CONFIG:_files' \
'--audit-retention=[Delete audit rows older than this (e.g. 90d), keeping a checkpoint so that what remains still verifies. Default\: keep everything. A setting of the database, like --idempotency-retention]:AUDIT_RETENTION:_default' \
'--audit-signing-key=[Sign a checkpoint of the audit (every chain'\''s start and head) with this Ed25519 key (\`audit keygen\`) each --witness-interval the audit changed, kept in the database and in --witness-file; prunes sign the chain starts they move (docs/guarantees.md)]:FILE:_files' \
'--witness-file=[Also append each signed checkpoint to this file, one JSON line each\: keep it (or ship it) where the database'\''s administrators cannot rewrite it]:PATH:_files' \
'--witness-interval=[How often a checkpoint is taken\: the rows written since the last one are verified, then signed, beside the write path]:WITNESS_INTERVAL:_default' \
'--max-subscribers=[Live event subscribers (\`/v1/events\`) at once; more get 503 until one leaves. At most half of --max-connections (a higher value is lowered to it, with a warning)\: subscribers are never cut to make room, so they must not be able to hold every connection]:MAX_SUBSCRIBERS:_default' \
'--max-connections=[Connections served at once; more wait to be accepted until one closes]:MAX_CONNECTIONS:_default' \
'--header-timeout=[A client that takes longer to send a request'\''s headers, or leaves a kept-alive connection idle this long, is disconnected]:HEADER_TIMEOUT:_default' \
'--body-read-timeout=[A request whose body has not arrived this long after its headers is answered 408 and its connection closed (a write'\''s attempt is audited). Every request with a body]:BODY_READ_TIMEOUT:_default' \
'--db-timeout=[A request that waits longer than this for the database is answered 503, and a PostgreSQL batch still waiting is abandoned with its connection\: for a network or server that stops answering without closing anything. A write'\''s outcome is then unknown until it is retried with the same Idempotency-Key. PostgreSQL ends any of the daemon'\''s sessions left inside a transaction this long without a statement, releasing its locks]:DB_TIMEOUT:_default' \
'--overlap-quiet=[An ownership overlap closes after this long without a rejected write (e.g. 60s)]:OVERLAP_QUIET:_default' \
'*--watch=[Follow the fence audit of a database of your own (\`fencewatch fence install\`)\: \`postgres\://…\` or \`sqlite\://PATH\`, optionally \`NAME=URL\`; repeatable. Its rows, overlaps, metrics and alerts appear here with \`source\` NAME (default\: the database'\''s name or the file'\''s stem). See docs/own-database.md, "Watching"]:[NAME=]URL:_default' \
'--api-key-file=[Require \`Authorization\: Bearer KEY\` on every /v1 request. One key per line\: \`KEY\` or \`NAME\:KEY\` (the name is recorded in the audit as the caller), optionally followed by scopes\: read, write\[=PREFIX\], lease\[=PREFIX\], admin. A PREFIX covers whole path segments\: \`billing\` covers \`billing\` and \`billing/…\`, \`billing/\` what is under it, neither covers \`billingsecrets\` or \`billing2/…\`. A write naming \`Fencing-Lease\: NAME\` also needs a lease scope covering NAME (\`lease=etcd\:PREFIX\` for etcd locks). A line without scopes may do everything. Each key at least 16 characters and on one line only (\`openssl rand -hex 32\`); a shorter, repeated or placeholder key stops the daemon at start]:API_KEY_FILE:_files' \
'*--allow-origin=[A web origin whose pages may call the daemon (e.g. https\://ops.example.com); repeatable. Any other request carrying an Origin header is refused with 403 cross-origin]:ORIGIN:_default' \
'*--allowed-host=[A host name clients may reach the daemon by (e.g. fencewatch.internal); repeatable, \`*\` for any. \`localhost\`, the --listen host and IP literals always are; a request whose Host names another gets 421 (DNS rebinding)]:HOST:_default' \
'--tls-cert=[Serve HTTPS only, with this PEM certificate chain (needs --tls-key)]:TLS_CERT:_files' \
'--tls-key=[The PEM private key of --tls-cert]:TLS_KEY:_files' \
'--http-workers=[Threads serving HTTP (the async runtime'\''s workers). Default\: one per core, less one]:HTTP_WORKERS:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--set-retention[Store this daemon'\''s --idempotency-retention and --audit-retention as the database'\''s, replacing what is stored (a flag left out stores its default\: 24h, keep everything); every daemon on the database keeps to them from its next prune]' \
'--strict-leases[Refuse writes with a lease'\''s current generation once its grant has expired or been released (409 lease-expired), instead of accepting and flagging them in the audit]' \
'--require-lease[Refuse every write that does not name a lease of this daemon'\''s authority (403 unknown-generation), so that no caller can present a token it made up]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(lease)
_arguments "${_arguments_options[@]}" : \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
":: :_fencewatch__subcmd__lease_commands" \
"*::: :->lease" \
&& ret=0

    case $state in
    (lease)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-lease-command-$line[1]:"
        case $line[1] in
            (acquire)
_arguments "${_arguments_options[@]}" : \
'--holder=[]:HOLDER:_default' \
'--ttl=[How long the grant lasts (e.g. 10s, 1500ms)]:TTL:_default' \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--token-only[Print only the token, for scripts]' \
'-h[Print help]' \
'--help[Print help]' \
':name:_default' \
&& ret=0
;;
(renew)
_arguments "${_arguments_options[@]}" : \
'--holder=[]:HOLDER:_default' \
'--token=[]:TOKEN:_default' \
'--ttl=[A new TTL (default\: the one given at acquire)]:TTL:_default' \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':name:_default' \
&& ret=0
;;
(release)
_arguments "${_arguments_options[@]}" : \
'--holder=[]:HOLDER:_default' \
'--token=[]:TOKEN:_default' \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':name:_default' \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':name:_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__lease__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-lease-help-command-$line[1]:"
        case $line[1] in
            (acquire)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(renew)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(release)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(tui)
_arguments "${_arguments_options[@]}" : \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--no-color[No colours (also when NO_COLOR is set)]' \
'--once[Print the current overview once and exit (with --json)]' \
'--json[With --once\: the overview as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(demo)
_arguments "${_arguments_options[@]}" : \
'--database=[Use this database instead of a temporary SQLite file]:DATABASE:_default' \
'--workers=[Simulated workers]:WORKERS:_default' \
'--resources=[Resources they hold (at most one fewer than workers\: one stands by)]:RESOURCES:_default' \
'--every=[Time between incidents (a worker stalling past its lease)]:EVERY:_default' \
'--duration=[How long a headless run lasts (e.g. 10s)]:DURATION:_default' \
'--authority=[Whose locks the workers take\: the daemon'\''s own leases, etcd'\''s (an \`etcd\` program on the PATH) or ZooKeeper'\''s (Debian'\''s zookeeper package and \`java\`), each started on free ports in a temporary folder and stopped at the end]:AUTHORITY:((daemon\:"Leases of the demo'\''s daemon"
etcd\:"etcd locks (\`Fencing-Lease\: etcd\:RESOURCE\`)"
zookeeper\:"ZooKeeper locks (\`Fencing-Lease\: zk\:/RESOURCE\`)"))' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--headless[Run without the dashboard, for --duration]' \
'--json[The summary at the end as JSON]' \
'--no-color[No colours in the dashboard (also when NO_COLOR is set)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
&& ret=0
;;
(audit)
_arguments "${_arguments_options[@]}" : \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
":: :_fencewatch__subcmd__audit_commands" \
"*::: :->audit" \
&& ret=0

    case $state in
    (audit)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-audit-command-$line[1]:"
        case $line[1] in
            (report)
_arguments "${_arguments_options[@]}" : \
'--format=[]:FORMAT:((text\:""
md\:"Markdown, to paste into a postmortem"
json\:""
html\:"A self-contained page with an SVG timeline"))' \
'-o+[Write to this file instead of standard output]:PATH:_files' \
'--output=[Write to this file instead of standard output]:PATH:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
':id:_default' \
&& ret=0
;;
(summary)
_arguments "${_arguments_options[@]}" : \
'--since=[RFC 3339 or a duration ago (\`7d\`)]:SINCE:_default' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(verify)
_arguments "${_arguments_options[@]}" : \
'--checkpoint=[Record the verified end of every chain in this file (written only when nothing is broken) and, when it exists, check only the rows after the positions it holds]:FILE:_files' \
'(--checkpoint)--witness=[Also hold the audit to the signed checkpoints in this witness file (and to those kept in the database)\: chains they saw must still reach the heads they saw, and starts move only by signed prunes. Needs --public-key; reads only the rows after those heads (with --full, every row)]:PATH:_files' \
'(--checkpoint)--public-key=[The witness'\''s public key (\`audit keygen\`'\''s FILE.pub). Without --witness, only the checkpoints kept in the database are used]:FILE.pub:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'--full[Check every row even when \`--checkpoint\` holds verified positions, or with \`--witness\`, rather than only the rows after the heads its checkpoints signed]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(keygen)
_arguments "${_arguments_options[@]}" : \
'--out=[]:FILE:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(witness)
_arguments "${_arguments_options[@]}" : \
'--key=[The signing key (\`audit keygen\`'\''s FILE)]:FILE:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(log)
_arguments "${_arguments_options[@]}" : \
'--resource=[]:RESOURCE:_default' \
'--owner=[]:OWNER:_default' \
'--outcome=[accepted, replayed, stale, superseded, lease_expired, revision_conflict, reset, …]:OUTCOME:_default' \
'--token=[]:TOKEN:_default' \
'--since=[]:SINCE:_default' \
'--until=[]:UNTIL:_default' \
'--limit=[The N newest matching rows (with \`--oldest-first\`, the N oldest)]:LIMIT:_default' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'--oldest-first[List the oldest rows first]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(export)
_arguments "${_arguments_options[@]}" : \
'--format=[]:FORMAT:(jsonl csv)' \
'--resource=[]:RESOURCE:_default' \
'--owner=[]:OWNER:_default' \
'--outcome=[accepted, replayed, stale, superseded, lease_expired, revision_conflict, reset, …]:OUTCOME:_default' \
'--token=[]:TOKEN:_default' \
'--since=[]:SINCE:_default' \
'--until=[]:UNTIL:_default' \
'--output=[Write here instead of stdout]:OUTPUT:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(incidents)
_arguments "${_arguments_options[@]}" : \
'--since=[]:SINCE:_default' \
'--until=[]:UNTIL:_default' \
'--resource=[]:RESOURCE:_default' \
'--limit=[The N latest incidents (by when each was first seen)]:LIMIT:_default' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'(--limit)--all[Every matching incident, however many]' \
'--json[]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(timeline)
_arguments "${_arguments_options[@]}" : \
'(--since --until)--around=[A minute either side of this incident (from \`incidents\`)]:AROUND:_default' \
'--since=[]:SINCE:_default' \
'--until=[]:UNTIL:_default' \
'(--around --since --until)--latest=[Without a window\: from the resource'\''s N-th newest audit row on]:N:_default' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'(--around --since --until --latest)--all[The whole history (without a window)]' \
'--json[]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
':resource:_default' \
&& ret=0
;;
(refusals)
_arguments "${_arguments_options[@]}" : \
'--since=[RFC 3339 or a duration ago (\`1h\`)]:SINCE:_default' \
'--until=[]:UNTIL:_default' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(prune)
_arguments "${_arguments_options[@]}" : \
'--before=[RFC 3339 or a duration ago (\`30d\`)]:BEFORE:_default' \
'--key=[Sign the chain starts the prune moves with the witness'\''s key, so that a witnessed \`verify\` tells them from rows deleted by hand]:FILE:_files' \
'--database=[\`sqlite\://PATH\` or \`postgres\://…\`\: the daemon'\''s database, or one with a fence installed]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema of the daemon'\''s tables (\`serve --schema\`) or of the fence (default\: the connection'\''s search path for the daemon'\''s, \`fencewatch\` for a fence)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'--fence[Read the fence installed in the database (\`fencewatch fence install\`) even where the daemon'\''s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon'\''s]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__audit__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-audit-help-command-$line[1]:"
        case $line[1] in
            (report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(summary)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(verify)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(keygen)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(witness)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(log)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(export)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(incidents)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(timeline)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(refusals)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(prune)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(bench)
_arguments "${_arguments_options[@]}" : \
'--url=[Drive this daemon instead of starting one]:URL:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// --url]:CA_CERT:_files' \
'--database=[The database of the daemon it starts (default\: a temporary SQLite file)]:DATABASE:_default' \
'--connections=[Concurrent keep-alive connections (and store clients for the baseline)]:CONNECTIONS:_default' \
'--resources=[]:RESOURCES:_default' \
'--stale=[The share of writes that carry a superseded generation]:STALE:_default' \
'--duration=[]:DURATION:_default' \
'--dashboard=[Instead of writes, measure the dashboard'\''s event path with this many write events]:EVENTS:_default' \
'--readers=[Clients reading values over HTTP while the writers run]:READERS:_default' \
'--subscribers=[Live event streams (\`/v1/events\`) followed while the writers run]:SUBSCRIBERS:_default' \
'(--no-http)--etcd=[Also run the same HTTP load with every write naming an etcd lock (\`Fencing-Lease\: etcd\:bench-etcd\`, the lock taken here with etcd'\''s lock API) against a daemon started with \`--etcd URL\`, reported beside the plain fence]:URL:_default' \
'(--no-http)--zookeeper=[Also run the same HTTP load with every write naming a ZooKeeper lock (\`Fencing-Lease\: zk\:/bench-zookeeper\`, the lock taken here with ZooKeeper'\''s lock recipe) against a daemon started with \`--zookeeper HOSTS\`, reported beside the plain fence]:HOST:PORT:_default' \
'(--url --no-http)--witness-interval=[Also run the same HTTP load against a daemon that signs audit checkpoints every DURATION (\`serve --audit-signing-key\` with a key made for the run, in a temporary folder, and --witness-file there), reported beside the plain fence with the checkpoints signed]:DURATION:_default' \
'--fill=[Before any load, fill the database of the daemon it starts (or --database) with this many audit rows, as its writers would have left them over --fill-span; with --duration 0s it only fills]:ROWS:_default' \
'--fill-resources=[The resources the filled rows are spread over (default\: --resources)]:R:_default' \
'--fill-span=[The time the filled rows are spread over, ending now]:DURATION:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--idempotency-keys[Send a fresh Idempotency-Key with every write]' \
'--no-baseline[Skip the store-only paths]' \
'(--no-baseline)--no-http[Skip the HTTP path (to profile the store alone)]' \
'--json[]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(write)
_arguments "${_arguments_options[@]}" : \
'--token=[The writer'\''s fencing token (inside \`fencewatch lock\`, the lock'\''s\: FENCEWATCH_TOKEN)]:TOKEN:_default' \
'--idempotency-key=[The operation'\''s identity, for safe retries]:IDEMPOTENCY_KEY:_default' \
'--if-match=[The revision the write expects (0\: never written)]:IF_MATCH:_default' \
'--lease=[The lease of the daemon'\''s authority that issued the token, or an external lock (\`etcd\:PREFIX\`, \`zk\:/PATH\`; inside \`fencewatch lock\`\: FENCEWATCH_LEASE)]:LEASE:_default' \
'--owner=[A label for the audit]:OWNER:_default' \
'--content-type=[The value'\''s media type]:CONTENT_TYPE:_default' \
'--url=[The daemon'\''s base URL]:URL:_default' \
'--api-key=[API key, sent as \`Authorization\: Bearer KEY\`]:API_KEY:_default' \
'--ca-cert=[Trust only this PEM CA certificate for an https\:// daemon (a private CA); without it, the system'\''s trusted roots]:CA_CERT:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':key -- The resource key (for example accounts/totals):_default' \
&& ret=0
;;
(lock)
_arguments "${_arguments_options[@]}" : \
'--etcd=[etcd endpoints (comma-separated \`http\://HOST\:PORT\`), for an \`etcd\:\` lock]:ETCD:_default' \
'--zookeeper=[ZooKeeper servers (comma-separated \`HOST\:PORT\`), for a \`zk\:\` lock]:ZOOKEEPER:_default' \
'--ttl=[How long the lock outlives this process if it stops renewing (etcd lease TTL, ZooKeeper session timeout)]:TTL:_default' \
'--wait=[How long to wait for the lock before giving up (exit 6)]:WAIT:_default' \
'--name=[The holder'\''s name, kept in the ZooKeeper lock node (shown as who held the lock)]:NAME:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':lock -- The lock\: `etcd\:PREFIX` or `zk\:/PATH`, as writes name it in `Fencing-Lease`:_default' \
'*::command -- The command to run while holding the lock; its exit code is this command'\''s:_default' \
&& ret=0
;;
(fence)
_arguments "${_arguments_options[@]}" : \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
":: :_fencewatch__subcmd__fence_commands" \
"*::: :->fence" \
&& ret=0

    case $state in
    (fence)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-fence-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--lease-schema=[PostgreSQL\: the schema of the fencewatch daemon'\''s \`leases\` table that the guard'\''s \`lease =>\` reads (default public)]:LEASE_SCHEMA:_default' \
'--operation-retention=[How long an applied operation id is answered \`replayed\` rather than applied again (e.g. 24h, 7d; default 24h). Kept when not given]:OPERATION_RETENTION:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(protect)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--token-column=[The column holding the writer'\''s fencing token (an integer)]:TOKEN_COLUMN:_default' \
'--scope-column=[The column whose value is the row'\''s scope]:SCOPE_COLUMN:_default' \
'--scope=[One scope for the whole table]:SCOPE:_default' \
'--op-column=[The column holding the operation id (a retry of an applied one is not applied again)]:OP_COLUMN:_default' \
'--owner-column=[The column naming the writer, for the audit]:OWNER_COLUMN:_default' \
'--lease=[A lease of the fencewatch daemon whose store is this database\: a generation it superseded is refused even on a scope that never saw the newer one. \`{scope}\` in the name stands for the row'\''s scope\: \`orders/{scope}\` is one lease per scope]:LEASE:_default' \
'--generation=[Where a write'\''s generation comes from\: \`stated\` (the transaction'\''s, from \`fencewatch.begin(token => …)\`, or the token column the statement sets; an UPDATE stating neither is refused; PostgreSQL'\''s default) or \`row\` (the row'\''s token column as the statement leaves it; SQLite'\''s only)]:GENERATION:(stated row)' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':table -- The table (PostgreSQL\: as your search path finds it, or schema.table):_default' \
&& ret=0
;;
(unprotect)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':table:_default' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'--json[]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(uninstall)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(reset)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--to=[Its highest accepted generation afterwards (at least 1)]:TO:_default' \
'--reason=[Why, for the audit (1 to 512 printable characters)]:REASON:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':scope -- The scope to reset:_default' \
&& ret=0
;;
(seal)
_arguments "${_arguments_options[@]}" : \
'--database=[Your database\: \`postgres\://USER@HOST/DB\` or \`sqlite\://PATH\` (an existing file; it is never created)]:DATABASE:_default' \
'--schema=[PostgreSQL\: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*]:SCHEMA:_default' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__fence__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-fence-help-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(protect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(unprotect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(uninstall)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reset)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(seal)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
':shell:(bash elvish fish powershell zsh)' \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
'--dir=[]:DIR:_files' \
'--log-format=[How logs on stderr look\: plain text (coloured only on a terminal) or one JSON object a line, for a log collector]:LOG_FORMAT:(text json)' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-help-command-$line[1]:"
        case $line[1] in
            (serve)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(lease)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__help__subcmd__lease_commands" \
"*::: :->lease" \
&& ret=0

    case $state in
    (lease)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-help-lease-command-$line[1]:"
        case $line[1] in
            (acquire)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(renew)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(release)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(tui)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(demo)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(audit)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__help__subcmd__audit_commands" \
"*::: :->audit" \
&& ret=0

    case $state in
    (audit)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-help-audit-command-$line[1]:"
        case $line[1] in
            (report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(summary)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(verify)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(keygen)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(witness)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(log)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(export)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(incidents)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(timeline)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(refusals)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(prune)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(bench)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(write)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(lock)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fence)
_arguments "${_arguments_options[@]}" : \
":: :_fencewatch__subcmd__help__subcmd__fence_commands" \
"*::: :->fence" \
&& ret=0

    case $state in
    (fence)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:fencewatch-help-fence-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(protect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(unprotect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(uninstall)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reset)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(seal)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_fencewatch_commands] )) ||
_fencewatch_commands() {
    local commands; commands=(
'serve:Run the daemon\: fenced writes, the lease authority and the audit over HTTP' \
'lease:Acquire, renew, release or show a lease of a running daemon'\''s authority' \
'tui:The live dashboard of a running daemon' \
'demo:The whole thing in one command\: a daemon on a temporary SQLite file, simulated workers whose pauses outlive their leases, and the dashboard' \
'audit:Reconstruct incidents, check tamper evidence, prune and export the audit, straight from the database (the daemon may be down)' \
'bench:Measure fenced writes over HTTP, side by side with the same writes straight through the store' \
'write:Write stdin as a resource'\''s value, fenced by a token' \
'lock:Hold an etcd or ZooKeeper lock while a command runs (like \`etcdctl lock\`)\: the command gets FENCEWATCH_TOKEN and FENCEWATCH_LEASE, so \`fencewatch write\` in it needs no flags' \
'fence:Fence your own database\: install, protect tables, status, seal, uninstall (PostgreSQL or SQLite)' \
'completions:Print a shell completion script (e.g. \`fencewatch completions bash > /etc/bash_completion.d/fencewatch\`)' \
'man:Print the manual page (roff), e.g. \`fencewatch man | man -l -\`; with \`--dir DIR\`, write it and one page per subcommand (\`fencewatch-serve.1\`, …) into DIR instead' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit_commands] )) ||
_fencewatch__subcmd__audit_commands() {
    local commands; commands=(
'report:The postmortem of one incident (an id from \`incidents\`)\: the stale owner'\''s pause, its grant'\''s lapse, the successor'\''s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it' \
'summary:Incidents since a time\: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse' \
'verify:Check every resource'\''s hash chain, that no row lacks a place in one, and that each resource'\''s stored state is what its audit records; report the first broken link of each (exit 1 if any)' \
'keygen:Make an Ed25519 key pair for a witnessed audit\: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)' \
'witness:Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database\: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did' \
'log:Audit rows, newest first' \
'export:Every matching row with every field, streamed (constant memory)' \
'incidents:Ownership-overlap incidents with their generations, owners, counts and times\: the latest 100 by default, oldest of them first' \
'timeline:A resource'\''s writes and its leases'\'' history interleaved\: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)' \
'refusals:Requests refused before the fence (no or a wrong API key, a key'\''s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first' \
'prune:Delete rows older than a time behind per-resource checkpoints (what \`--audit-retention\` does in the daemon)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch audit commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__export_commands] )) ||
_fencewatch__subcmd__audit__subcmd__export_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit export commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help_commands() {
    local commands; commands=(
'report:The postmortem of one incident (an id from \`incidents\`)\: the stale owner'\''s pause, its grant'\''s lapse, the successor'\''s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it' \
'summary:Incidents since a time\: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse' \
'verify:Check every resource'\''s hash chain, that no row lacks a place in one, and that each resource'\''s stored state is what its audit records; report the first broken link of each (exit 1 if any)' \
'keygen:Make an Ed25519 key pair for a witnessed audit\: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)' \
'witness:Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database\: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did' \
'log:Audit rows, newest first' \
'export:Every matching row with every field, streamed (constant memory)' \
'incidents:Ownership-overlap incidents with their generations, owners, counts and times\: the latest 100 by default, oldest of them first' \
'timeline:A resource'\''s writes and its leases'\'' history interleaved\: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)' \
'refusals:Requests refused before the fence (no or a wrong API key, a key'\''s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first' \
'prune:Delete rows older than a time behind per-resource checkpoints (what \`--audit-retention\` does in the daemon)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch audit help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__export_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__export_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help export commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__help_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__incidents_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__incidents_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help incidents commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__keygen_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help keygen commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__log_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__log_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help log commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__prune_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__prune_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help prune commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__refusals_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__refusals_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help refusals commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__report_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help report commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__summary_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__summary_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help summary commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__timeline_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__timeline_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help timeline commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__verify_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__verify_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help verify commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__help__subcmd__witness_commands] )) ||
_fencewatch__subcmd__audit__subcmd__help__subcmd__witness_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit help witness commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__incidents_commands] )) ||
_fencewatch__subcmd__audit__subcmd__incidents_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit incidents commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__keygen_commands] )) ||
_fencewatch__subcmd__audit__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit keygen commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__log_commands] )) ||
_fencewatch__subcmd__audit__subcmd__log_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit log commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__prune_commands] )) ||
_fencewatch__subcmd__audit__subcmd__prune_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit prune commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__refusals_commands] )) ||
_fencewatch__subcmd__audit__subcmd__refusals_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit refusals commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__report_commands] )) ||
_fencewatch__subcmd__audit__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit report commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__summary_commands] )) ||
_fencewatch__subcmd__audit__subcmd__summary_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit summary commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__timeline_commands] )) ||
_fencewatch__subcmd__audit__subcmd__timeline_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit timeline commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__verify_commands] )) ||
_fencewatch__subcmd__audit__subcmd__verify_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit verify commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__audit__subcmd__witness_commands] )) ||
_fencewatch__subcmd__audit__subcmd__witness_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch audit witness commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__bench_commands] )) ||
_fencewatch__subcmd__bench_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch bench commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__completions_commands] )) ||
_fencewatch__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch completions commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__demo_commands] )) ||
_fencewatch__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch demo commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence_commands] )) ||
_fencewatch__subcmd__fence_commands() {
    local commands; commands=(
'install:Install the fence, or upgrade it to this fencewatch'\''s version (idempotent)' \
'protect:Fence writes to a table\: an INSERT or UPDATE whose token is below its scope'\''s highest accepted generation affects zero rows, and every attempt is audited' \
'unprotect:Remove the fence'\''s trigger from a table (the table is otherwise left as it is)' \
'status:The installed version, protected tables, counts, and whether refusals survive a rollback' \
'uninstall:Remove everything install and protect created, and nothing else (idempotent)' \
'reset:Set a scope'\''s highest accepted generation by hand (the way back from a runaway token), audited in the scope'\''s chain with outcome \`reset\`' \
'seal:SQLite\: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch fence commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help_commands() {
    local commands; commands=(
'install:Install the fence, or upgrade it to this fencewatch'\''s version (idempotent)' \
'protect:Fence writes to a table\: an INSERT or UPDATE whose token is below its scope'\''s highest accepted generation affects zero rows, and every attempt is audited' \
'unprotect:Remove the fence'\''s trigger from a table (the table is otherwise left as it is)' \
'status:The installed version, protected tables, counts, and whether refusals survive a rollback' \
'uninstall:Remove everything install and protect created, and nothing else (idempotent)' \
'reset:Set a scope'\''s highest accepted generation by hand (the way back from a runaway token), audited in the scope'\''s chain with outcome \`reset\`' \
'seal:SQLite\: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch fence help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__help_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__install_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help install commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__protect_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__protect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help protect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__reset_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help reset commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__seal_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__seal_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help seal commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__status_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help status commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__uninstall_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__uninstall_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help uninstall commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__help__subcmd__unprotect_commands] )) ||
_fencewatch__subcmd__fence__subcmd__help__subcmd__unprotect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence help unprotect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__install_commands] )) ||
_fencewatch__subcmd__fence__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence install commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__protect_commands] )) ||
_fencewatch__subcmd__fence__subcmd__protect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence protect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__reset_commands] )) ||
_fencewatch__subcmd__fence__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence reset commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__seal_commands] )) ||
_fencewatch__subcmd__fence__subcmd__seal_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence seal commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__status_commands] )) ||
_fencewatch__subcmd__fence__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence status commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__uninstall_commands] )) ||
_fencewatch__subcmd__fence__subcmd__uninstall_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence uninstall commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__fence__subcmd__unprotect_commands] )) ||
_fencewatch__subcmd__fence__subcmd__unprotect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch fence unprotect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help_commands] )) ||
_fencewatch__subcmd__help_commands() {
    local commands; commands=(
'serve:Run the daemon\: fenced writes, the lease authority and the audit over HTTP' \
'lease:Acquire, renew, release or show a lease of a running daemon'\''s authority' \
'tui:The live dashboard of a running daemon' \
'demo:The whole thing in one command\: a daemon on a temporary SQLite file, simulated workers whose pauses outlive their leases, and the dashboard' \
'audit:Reconstruct incidents, check tamper evidence, prune and export the audit, straight from the database (the daemon may be down)' \
'bench:Measure fenced writes over HTTP, side by side with the same writes straight through the store' \
'write:Write stdin as a resource'\''s value, fenced by a token' \
'lock:Hold an etcd or ZooKeeper lock while a command runs (like \`etcdctl lock\`)\: the command gets FENCEWATCH_TOKEN and FENCEWATCH_LEASE, so \`fencewatch write\` in it needs no flags' \
'fence:Fence your own database\: install, protect tables, status, seal, uninstall (PostgreSQL or SQLite)' \
'completions:Print a shell completion script (e.g. \`fencewatch completions bash > /etc/bash_completion.d/fencewatch\`)' \
'man:Print the manual page (roff), e.g. \`fencewatch man | man -l -\`; with \`--dir DIR\`, write it and one page per subcommand (\`fencewatch-serve.1\`, …) into DIR instead' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit_commands() {
    local commands; commands=(
'report:The postmortem of one incident (an id from \`incidents\`)\: the stale owner'\''s pause, its grant'\''s lapse, the successor'\''s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it' \
'summary:Incidents since a time\: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse' \
'verify:Check every resource'\''s hash chain, that no row lacks a place in one, and that each resource'\''s stored state is what its audit records; report the first broken link of each (exit 1 if any)' \
'keygen:Make an Ed25519 key pair for a witnessed audit\: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)' \
'witness:Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database\: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did' \
'log:Audit rows, newest first' \
'export:Every matching row with every field, streamed (constant memory)' \
'incidents:Ownership-overlap incidents with their generations, owners, counts and times\: the latest 100 by default, oldest of them first' \
'timeline:A resource'\''s writes and its leases'\'' history interleaved\: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)' \
'refusals:Requests refused before the fence (no or a wrong API key, a key'\''s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first' \
'prune:Delete rows older than a time behind per-resource checkpoints (what \`--audit-retention\` does in the daemon)' \
    )
    _describe -t commands 'fencewatch help audit commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__export_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__export_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit export commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__incidents_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__incidents_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit incidents commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__keygen_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit keygen commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__log_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__log_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit log commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__prune_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__prune_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit prune commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__refusals_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__refusals_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit refusals commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__report_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit report commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__summary_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__summary_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit summary commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__timeline_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__timeline_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit timeline commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__verify_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__verify_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit verify commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__audit__subcmd__witness_commands] )) ||
_fencewatch__subcmd__help__subcmd__audit__subcmd__witness_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help audit witness commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__bench_commands] )) ||
_fencewatch__subcmd__help__subcmd__bench_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help bench commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__completions_commands] )) ||
_fencewatch__subcmd__help__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help completions commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__demo_commands] )) ||
_fencewatch__subcmd__help__subcmd__demo_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help demo commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence_commands() {
    local commands; commands=(
'install:Install the fence, or upgrade it to this fencewatch'\''s version (idempotent)' \
'protect:Fence writes to a table\: an INSERT or UPDATE whose token is below its scope'\''s highest accepted generation affects zero rows, and every attempt is audited' \
'unprotect:Remove the fence'\''s trigger from a table (the table is otherwise left as it is)' \
'status:The installed version, protected tables, counts, and whether refusals survive a rollback' \
'uninstall:Remove everything install and protect created, and nothing else (idempotent)' \
'reset:Set a scope'\''s highest accepted generation by hand (the way back from a runaway token), audited in the scope'\''s chain with outcome \`reset\`' \
'seal:SQLite\: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)' \
    )
    _describe -t commands 'fencewatch help fence commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__install_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence install commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__protect_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__protect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence protect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__reset_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence reset commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__seal_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__seal_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence seal commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__status_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence status commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__uninstall_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__uninstall_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence uninstall commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__fence__subcmd__unprotect_commands] )) ||
_fencewatch__subcmd__help__subcmd__fence__subcmd__unprotect_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help fence unprotect commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__help_commands] )) ||
_fencewatch__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lease_commands] )) ||
_fencewatch__subcmd__help__subcmd__lease_commands() {
    local commands; commands=(
'acquire:Take the lease\: prints it with its new generation (the fencing token)' \
'renew:Extend the current grant' \
'release:End the current grant early' \
'show:Show the lease'\''s holder, generation and expiry' \
    )
    _describe -t commands 'fencewatch help lease commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lease__subcmd__acquire_commands] )) ||
_fencewatch__subcmd__help__subcmd__lease__subcmd__acquire_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help lease acquire commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lease__subcmd__release_commands] )) ||
_fencewatch__subcmd__help__subcmd__lease__subcmd__release_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help lease release commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lease__subcmd__renew_commands] )) ||
_fencewatch__subcmd__help__subcmd__lease__subcmd__renew_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help lease renew commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lease__subcmd__show_commands] )) ||
_fencewatch__subcmd__help__subcmd__lease__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help lease show commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__lock_commands] )) ||
_fencewatch__subcmd__help__subcmd__lock_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help lock commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__man_commands] )) ||
_fencewatch__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help man commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__serve_commands] )) ||
_fencewatch__subcmd__help__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help serve commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__tui_commands] )) ||
_fencewatch__subcmd__help__subcmd__tui_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help tui commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__help__subcmd__write_commands] )) ||
_fencewatch__subcmd__help__subcmd__write_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch help write commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease_commands] )) ||
_fencewatch__subcmd__lease_commands() {
    local commands; commands=(
'acquire:Take the lease\: prints it with its new generation (the fencing token)' \
'renew:Extend the current grant' \
'release:End the current grant early' \
'show:Show the lease'\''s holder, generation and expiry' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch lease commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__acquire_commands] )) ||
_fencewatch__subcmd__lease__subcmd__acquire_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease acquire commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help_commands() {
    local commands; commands=(
'acquire:Take the lease\: prints it with its new generation (the fencing token)' \
'renew:Extend the current grant' \
'release:End the current grant early' \
'show:Show the lease'\''s holder, generation and expiry' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'fencewatch lease help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help__subcmd__acquire_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help__subcmd__acquire_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease help acquire commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help__subcmd__help_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease help help commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help__subcmd__release_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help__subcmd__release_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease help release commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help__subcmd__renew_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help__subcmd__renew_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease help renew commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__help__subcmd__show_commands] )) ||
_fencewatch__subcmd__lease__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease help show commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__release_commands] )) ||
_fencewatch__subcmd__lease__subcmd__release_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease release commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__renew_commands] )) ||
_fencewatch__subcmd__lease__subcmd__renew_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease renew commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lease__subcmd__show_commands] )) ||
_fencewatch__subcmd__lease__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lease show commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__lock_commands] )) ||
_fencewatch__subcmd__lock_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch lock commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__man_commands] )) ||
_fencewatch__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch man commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__serve_commands] )) ||
_fencewatch__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch serve commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__tui_commands] )) ||
_fencewatch__subcmd__tui_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch tui commands' commands "$@"
}
(( $+functions[_fencewatch__subcmd__write_commands] )) ||
_fencewatch__subcmd__write_commands() {
    local commands; commands=()
    _describe -t commands 'fencewatch write commands' commands "$@"
}

if [ "$funcstack[1]" = "_fencewatch" ]; then
    _fencewatch "$@"
else
    compdef _fencewatch fencewatch
fi

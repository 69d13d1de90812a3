# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_fencewatch_global_optspecs
    string join \n log-format= h/help V/version
end

function __fish_fencewatch_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_fencewatch_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_fencewatch_using_subcommand
    set -l cmd (__fish_fencewatch_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c fencewatch -n "__fish_fencewatch_needs_command" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_needs_command" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -s V -l version -d 'Print version'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "serve" -d 'Run the daemon: fenced writes, the lease authority and the audit over HTTP'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "lease" -d 'Acquire, renew, release or show a lease of a running daemon\'s authority'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "tui" -d 'The live dashboard of a running daemon'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "demo" -d 'The whole thing in one command: a daemon on a temporary SQLite file, simulated workers whose pauses outlive their leases, and the dashboard'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "audit" -d 'Reconstruct incidents, check tamper evidence, prune and export the audit, straight from the database (the daemon may be down)'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "bench" -d 'Measure fenced writes over HTTP, side by side with the same writes straight through the store'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "write" -d 'Write stdin as a resource\'s value, fenced by a token'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "lock" -d 'Hold an etcd or ZooKeeper lock while a command runs (like `etcdctl lock`): the command gets FENCEWATCH_TOKEN and FENCEWATCH_LEASE, so `fencewatch write` in it needs no flags'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "fence" -d 'Fence your own database: install, protect tables, status, seal, uninstall (PostgreSQL or SQLite)'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "completions" -d 'Print a shell completion script (e.g. `fencewatch completions bash > /etc/bash_completion.d/fencewatch`)'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "man" -d 'Print the manual page (roff), e.g. `fencewatch man | man -l -`; with `--dir DIR`, write it and one page per subcommand (`fencewatch-serve.1`, …) into DIR instead'
complete -c fencewatch -n "__fish_fencewatch_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l listen -d 'Address to listen on; port 0 picks a free port (printed on the first line of stdout)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l database -d '`sqlite://PATH` (created on first start) or `postgres://USER@HOST/DB`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l schema -d 'PostgreSQL: keep the daemon\'s tables in this schema, created if missing, instead of the connection\'s first (`public`); every daemon sharing the fence gives the same one' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l max-value-bytes -d 'The largest value a write may carry, in bytes' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l idempotency-retention -d 'How long an accepted operation\'s result is kept for replay by its Idempotency-Key (e.g. 24h, 90m; default 24h). A retry after that is decided afresh; see the README. A setting of the database: the first daemon on it stores it, later ones keep to the stored value (see --set-retention)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l db-max-connections -d 'PostgreSQL connections per daemon' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l etcd -d 'etcd endpoints (comma-separated `http://HOST:PORT`): writes may then name an etcd lock as their authority (`Fencing-Lease: etcd:PREFIX`, the lock\'s create revision as the token), checked against etcd within --db-timeout' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l zookeeper -d 'ZooKeeper servers (comma-separated `HOST:PORT`): writes may then name a ZooKeeper lock as their authority (`Fencing-Lease: zk:/PATH`, the czxid of the caller\'s lock node as the token), checked against ZooKeeper (after a `sync`) within --db-timeout' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l lease-scope -d 'Which resources a lease\'s tokens may fence' -r -f -a "any\t'A lease\'s tokens may fence any resource'
prefix\t'Lease L\'s tokens may fence only resources L and L/…'"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l config -d 'Configuration file (TOML): alert rules and receivers; see assets/fencewatch.example.toml' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l audit-retention -d 'Delete audit rows older than this (e.g. 90d), keeping a checkpoint so that what remains still verifies. Default: keep everything. A setting of the database, like --idempotency-retention' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l audit-signing-key -d 'Sign a checkpoint of the audit (every chain\'s start and head) with this Ed25519 key (`audit keygen`) each --witness-interval the audit changed, kept in the database and in --witness-file; prunes sign the chain starts they move (docs/guarantees.md)' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l witness-file -d 'Also append each signed checkpoint to this file, one JSON line each: keep it (or ship it) where the database\'s administrators cannot rewrite it' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l witness-interval -d 'How often a checkpoint is taken: the rows written since the last one are verified, then signed, beside the write path' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l max-subscribers -d 'Live event subscribers (`/v1/events`) at once; more get 503 until one leaves. At most half of --max-connections (a higher value is lowered to it, with a warning): subscribers are never cut to make room, so they must not be able to hold every connection' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l max-connections -d 'Connections served at once; more wait to be accepted until one closes' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l header-timeout -d 'A client that takes longer to send a request\'s headers, or leaves a kept-alive connection idle this long, is disconnected' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l body-read-timeout -d 'A request whose body has not arrived this long after its headers is answered 408 and its connection closed (a write\'s attempt is audited). Every request with a body' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l db-timeout -d 'A request that waits longer than this for the database is answered 503, and a PostgreSQL batch still waiting is abandoned with its connection: for a network or server that stops answering without closing anything. A write\'s outcome is then unknown until it is retried with the same Idempotency-Key. PostgreSQL ends any of the daemon\'s sessions left inside a transaction this long without a statement, releasing its locks' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l overlap-quiet -d 'An ownership overlap closes after this long without a rejected write (e.g. 60s)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l watch -d 'Follow the fence audit of a database of your own (`fencewatch fence install`): `postgres://…` or `sqlite://PATH`, optionally `NAME=URL`; repeatable. Its rows, overlaps, metrics and alerts appear here with `source` NAME (default: the database\'s name or the file\'s stem). See docs/own-database.md, "Watching"' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l api-key-file -d 'Require `Authorization: Bearer KEY` on every /v1 request. One key per line: `KEY` or `NAME:KEY` (the name is recorded in the audit as the caller), optionally followed by scopes: read, write[=PREFIX], lease[=PREFIX], admin. A PREFIX covers whole path segments: `billing` covers `billing` and `billing/…`, `billing/` what is under it, neither covers `billingsecrets` or `billing2/…`. A write naming `Fencing-Lease: NAME` also needs a lease scope covering NAME (`lease=etcd:PREFIX` for etcd locks). A line without scopes may do everything. Each key at least 16 characters and on one line only (`openssl rand -hex 32`); a shorter, repeated or placeholder key stops the daemon at start' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l allow-origin -d 'A web origin whose pages may call the daemon (e.g. https://ops.example.com); repeatable. Any other request carrying an Origin header is refused with 403 cross-origin' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l allowed-host -d 'A host name clients may reach the daemon by (e.g. fencewatch.internal); repeatable, `*` for any. `localhost`, the --listen host and IP literals always are; a request whose Host names another gets 421 (DNS rebinding)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l tls-cert -d 'Serve HTTPS only, with this PEM certificate chain (needs --tls-key)' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l tls-key -d 'The PEM private key of --tls-cert' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l http-workers -d 'Threads serving HTTP (the async runtime\'s workers). Default: one per core, less one' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l set-retention -d 'Store this daemon\'s --idempotency-retention and --audit-retention as the database\'s, replacing what is stored (a flag left out stores its default: 24h, keep everything); every daemon on the database keeps to them from its next prune'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l strict-leases -d 'Refuse writes with a lease\'s current generation once its grant has expired or been released (409 lease-expired), instead of accepting and flagging them in the audit'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -l require-lease -d 'Refuse every write that does not name a lease of this daemon\'s authority (403 unknown-generation), so that no caller can present a token it made up'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -f -a "acquire" -d 'Take the lease: prints it with its new generation (the fencing token)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -f -a "renew" -d 'Extend the current grant'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -f -a "release" -d 'End the current grant early'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -f -a "show" -d 'Show the lease\'s holder, generation and expiry'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and not __fish_seen_subcommand_from acquire renew release show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l holder -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l ttl -d 'How long the grant lasts (e.g. 10s, 1500ms)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -l token-only -d 'Print only the token, for scripts'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from acquire" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l holder -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l token -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l ttl -d 'A new TTL (default: the one given at acquire)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from renew" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l holder -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l token -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from release" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from show" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from show" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from show" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from show" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "acquire" -d 'Take the lease: prints it with its new generation (the fencing token)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "renew" -d 'Extend the current grant'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "release" -d 'End the current grant early'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show the lease\'s holder, generation and expiry'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l no-color -d 'No colours (also when NO_COLOR is set)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l once -d 'Print the current overview once and exit (with --json)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -l json -d 'With --once: the overview as JSON'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand tui" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l database -d 'Use this database instead of a temporary SQLite file' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l workers -d 'Simulated workers' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l resources -d 'Resources they hold (at most one fewer than workers: one stands by)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l every -d 'Time between incidents (a worker stalling past its lease)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l duration -d 'How long a headless run lasts (e.g. 10s)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l authority -d 'Whose locks the workers take: the daemon\'s own leases, etcd\'s (an `etcd` program on the PATH) or ZooKeeper\'s (Debian\'s zookeeper package and `java`), each started on free ports in a temporary folder and stopped at the end' -r -f -a "daemon\t'Leases of the demo\'s daemon'
etcd\t'etcd locks (`Fencing-Lease: etcd:RESOURCE`)'
zookeeper\t'ZooKeeper locks (`Fencing-Lease: zk:/RESOURCE`)'"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l headless -d 'Run without the dashboard, for --duration'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l json -d 'The summary at the end as JSON'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -l no-color -d 'No colours in the dashboard (also when NO_COLOR is set)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand demo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "report" -d 'The postmortem of one incident (an id from `incidents`): the stale owner\'s pause, its grant\'s lapse, the successor\'s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "summary" -d 'Incidents since a time: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "verify" -d 'Check every resource\'s hash chain, that no row lacks a place in one, and that each resource\'s stored state is what its audit records; report the first broken link of each (exit 1 if any)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "keygen" -d 'Make an Ed25519 key pair for a witnessed audit: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "witness" -d 'Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "log" -d 'Audit rows, newest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "export" -d 'Every matching row with every field, streamed (constant memory)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "incidents" -d 'Ownership-overlap incidents with their generations, owners, counts and times: the latest 100 by default, oldest of them first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "timeline" -d 'A resource\'s writes and its leases\' history interleaved: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "refusals" -d 'Requests refused before the fence (no or a wrong API key, a key\'s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "prune" -d 'Delete rows older than a time behind per-resource checkpoints (what `--audit-retention` does in the daemon)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and not __fish_seen_subcommand_from report summary verify keygen witness log export incidents timeline refusals prune help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -l format -r -f -a "text\t''
md\t'Markdown, to paste into a postmortem'
json\t''
html\t'A self-contained page with an SVG timeline'"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -s o -l output -d 'Write to this file instead of standard output' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l since -d 'RFC 3339 or a duration ago (`7d`)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from summary" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l checkpoint -d 'Record the verified end of every chain in this file (written only when nothing is broken) and, when it exists, check only the rows after the positions it holds' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l witness -d 'Also hold the audit to the signed checkpoints in this witness file (and to those kept in the database): chains they saw must still reach the heads they saw, and starts move only by signed prunes. Needs --public-key; reads only the rows after those heads (with --full, every row)' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l public-key -d 'The witness\'s public key (`audit keygen`\'s FILE.pub). Without --witness, only the checkpoints kept in the database are used' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l full -d 'Check every row even when `--checkpoint` holds verified positions, or with `--witness`, rather than only the rows after the heads its checkpoints signed'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -l out -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from keygen" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -l key -d 'The signing key (`audit keygen`\'s FILE)' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from witness" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l resource -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l owner -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l outcome -d 'accepted, replayed, stale, superseded, lease_expired, revision_conflict, reset, …' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l token -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l since -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l until -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l limit -d 'The N newest matching rows (with `--oldest-first`, the N oldest)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l oldest-first -d 'List the oldest rows first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from log" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l format -r -f -a "jsonl\t''
csv\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l resource -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l owner -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l outcome -d 'accepted, replayed, stale, superseded, lease_expired, revision_conflict, reset, …' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l token -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l since -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l until -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l output -d 'Write here instead of stdout' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l since -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l until -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l resource -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l limit -d 'The N latest incidents (by when each was first seen)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l all -d 'Every matching incident, however many'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from incidents" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l around -d 'A minute either side of this incident (from `incidents`)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l since -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l until -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l latest -d 'Without a window: from the resource\'s N-th newest audit row on' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l all -d 'The whole history (without a window)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from timeline" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l since -d 'RFC 3339 or a duration ago (`1h`)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l until -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from refusals" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l before -d 'RFC 3339 or a duration ago (`30d`)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l key -d 'Sign the chain starts the prune moves with the witness\'s key, so that a witnessed `verify` tells them from rows deleted by hand' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l database -d '`sqlite://PATH` or `postgres://…`: the daemon\'s database, or one with a fence installed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l schema -d 'PostgreSQL: the schema of the daemon\'s tables (`serve --schema`) or of the fence (default: the connection\'s search path for the daemon\'s, `fencewatch` for a fence)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -l fence -d 'Read the fence installed in the database (`fencewatch fence install`) even where the daemon\'s tables are there too. Without it, a database with a fence and no daemon tables is read as a fence, and one with both as the daemon\'s'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from prune" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "report" -d 'The postmortem of one incident (an id from `incidents`): the stale owner\'s pause, its grant\'s lapse, the successor\'s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "summary" -d 'Incidents since a time: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Check every resource\'s hash chain, that no row lacks a place in one, and that each resource\'s stored state is what its audit records; report the first broken link of each (exit 1 if any)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "keygen" -d 'Make an Ed25519 key pair for a witnessed audit: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "witness" -d 'Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "log" -d 'Audit rows, newest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "export" -d 'Every matching row with every field, streamed (constant memory)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "incidents" -d 'Ownership-overlap incidents with their generations, owners, counts and times: the latest 100 by default, oldest of them first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "timeline" -d 'A resource\'s writes and its leases\' history interleaved: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "refusals" -d 'Requests refused before the fence (no or a wrong API key, a key\'s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "prune" -d 'Delete rows older than a time behind per-resource checkpoints (what `--audit-retention` does in the daemon)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand audit; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l url -d 'Drive this daemon instead of starting one' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// --url' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l database -d 'The database of the daemon it starts (default: a temporary SQLite file)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l connections -d 'Concurrent keep-alive connections (and store clients for the baseline)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l resources -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l stale -d 'The share of writes that carry a superseded generation' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l duration -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l dashboard -d 'Instead of writes, measure the dashboard\'s event path with this many write events' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l readers -d 'Clients reading values over HTTP while the writers run' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l subscribers -d 'Live event streams (`/v1/events`) followed while the writers run' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l etcd -d 'Also run the same HTTP load with every write naming an etcd lock (`Fencing-Lease: etcd:bench-etcd`, the lock taken here with etcd\'s lock API) against a daemon started with `--etcd URL`, reported beside the plain fence' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l zookeeper -d 'Also run the same HTTP load with every write naming a ZooKeeper lock (`Fencing-Lease: zk:/bench-zookeeper`, the lock taken here with ZooKeeper\'s lock recipe) against a daemon started with `--zookeeper HOSTS`, reported beside the plain fence' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l witness-interval -d 'Also run the same HTTP load against a daemon that signs audit checkpoints every DURATION (`serve --audit-signing-key` with a key made for the run, in a temporary folder, and --witness-file there), reported beside the plain fence with the checkpoints signed' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l fill -d 'Before any load, fill the database of the daemon it starts (or --database) with this many audit rows, as its writers would have left them over --fill-span; with --duration 0s it only fills' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l fill-resources -d 'The resources the filled rows are spread over (default: --resources)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l fill-span -d 'The time the filled rows are spread over, ending now' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l idempotency-keys -d 'Send a fresh Idempotency-Key with every write'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l no-baseline -d 'Skip the store-only paths'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l no-http -d 'Skip the HTTP path (to profile the store alone)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand bench" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l token -d 'The writer\'s fencing token (inside `fencewatch lock`, the lock\'s: FENCEWATCH_TOKEN)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l idempotency-key -d 'The operation\'s identity, for safe retries' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l if-match -d 'The revision the write expects (0: never written)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l lease -d 'The lease of the daemon\'s authority that issued the token, or an external lock (`etcd:PREFIX`, `zk:/PATH`; inside `fencewatch lock`: FENCEWATCH_LEASE)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l owner -d 'A label for the audit' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l content-type -d 'The value\'s media type' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l url -d 'The daemon\'s base URL' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l api-key -d 'API key, sent as `Authorization: Bearer KEY`' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l ca-cert -d 'Trust only this PEM CA certificate for an https:// daemon (a private CA); without it, the system\'s trusted roots' -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand write" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l etcd -d 'etcd endpoints (comma-separated `http://HOST:PORT`), for an `etcd:` lock' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l zookeeper -d 'ZooKeeper servers (comma-separated `HOST:PORT`), for a `zk:` lock' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l ttl -d 'How long the lock outlives this process if it stops renewing (etcd lease TTL, ZooKeeper session timeout)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l wait -d 'How long to wait for the lock before giving up (exit 6)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l name -d 'The holder\'s name, kept in the ZooKeeper lock node (shown as who held the lock)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand lock" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "install" -d 'Install the fence, or upgrade it to this fencewatch\'s version (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "protect" -d 'Fence writes to a table: an INSERT or UPDATE whose token is below its scope\'s highest accepted generation affects zero rows, and every attempt is audited'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "unprotect" -d 'Remove the fence\'s trigger from a table (the table is otherwise left as it is)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "status" -d 'The installed version, protected tables, counts, and whether refusals survive a rollback'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "uninstall" -d 'Remove everything install and protect created, and nothing else (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "reset" -d 'Set a scope\'s highest accepted generation by hand (the way back from a runaway token), audited in the scope\'s chain with outcome `reset`'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "seal" -d 'SQLite: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and not __fish_seen_subcommand_from install protect unprotect status uninstall reset seal help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -l lease-schema -d 'PostgreSQL: the schema of the fencewatch daemon\'s `leases` table that the guard\'s `lease =>` reads (default public)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -l operation-retention -d 'How long an applied operation id is answered `replayed` rather than applied again (e.g. 24h, 7d; default 24h). Kept when not given' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l token-column -d 'The column holding the writer\'s fencing token (an integer)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l scope-column -d 'The column whose value is the row\'s scope' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l scope -d 'One scope for the whole table' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l op-column -d 'The column holding the operation id (a retry of an applied one is not applied again)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l owner-column -d 'The column naming the writer, for the audit' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l lease -d 'A lease of the fencewatch daemon whose store is this database: a generation it superseded is refused even on a scope that never saw the newer one. `{scope}` in the name stands for the row\'s scope: `orders/{scope}` is one lease per scope' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l generation -d 'Where a write\'s generation comes from: `stated` (the transaction\'s, from `fencewatch.begin(token => …)`, or the token column the statement sets; an UPDATE stating neither is refused; PostgreSQL\'s default) or `row` (the row\'s token column as the statement leaves it; SQLite\'s only)' -r -f -a "stated\t''
row\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from protect" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from unprotect" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from unprotect" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from unprotect" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from unprotect" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from status" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from status" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from status" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from status" -l json
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from uninstall" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from uninstall" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from uninstall" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from uninstall" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -l to -d 'Its highest accepted generation afterwards (at least 1)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -l reason -d 'Why, for the audit (1 to 512 printable characters)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from seal" -l database -d 'Your database: `postgres://USER@HOST/DB` or `sqlite://PATH` (an existing file; it is never created)' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from seal" -l schema -d 'PostgreSQL: the schema the fence lives in (default fencewatch). Not for SQLite, whose fence objects are named fencewatch_*' -r
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from seal" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from seal" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "install" -d 'Install the fence, or upgrade it to this fencewatch\'s version (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "protect" -d 'Fence writes to a table: an INSERT or UPDATE whose token is below its scope\'s highest accepted generation affects zero rows, and every attempt is audited'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "unprotect" -d 'Remove the fence\'s trigger from a table (the table is otherwise left as it is)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "status" -d 'The installed version, protected tables, counts, and whether refusals survive a rollback'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "uninstall" -d 'Remove everything install and protect created, and nothing else (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "reset" -d 'Set a scope\'s highest accepted generation by hand (the way back from a runaway token), audited in the scope\'s chain with outcome `reset`'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "seal" -d 'SQLite: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand fence; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand completions" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand completions" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand man" -l dir -r -F
complete -c fencewatch -n "__fish_fencewatch_using_subcommand man" -l log-format -d 'How logs on stderr look: plain text (coloured only on a terminal) or one JSON object a line, for a log collector' -r -f -a "text\t''
json\t''"
complete -c fencewatch -n "__fish_fencewatch_using_subcommand man" -s h -l help -d 'Print help'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "serve" -d 'Run the daemon: fenced writes, the lease authority and the audit over HTTP'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "lease" -d 'Acquire, renew, release or show a lease of a running daemon\'s authority'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "tui" -d 'The live dashboard of a running daemon'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "demo" -d 'The whole thing in one command: a daemon on a temporary SQLite file, simulated workers whose pauses outlive their leases, and the dashboard'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "audit" -d 'Reconstruct incidents, check tamper evidence, prune and export the audit, straight from the database (the daemon may be down)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "bench" -d 'Measure fenced writes over HTTP, side by side with the same writes straight through the store'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "write" -d 'Write stdin as a resource\'s value, fenced by a token'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "lock" -d 'Hold an etcd or ZooKeeper lock while a command runs (like `etcdctl lock`): the command gets FENCEWATCH_TOKEN and FENCEWATCH_LEASE, so `fencewatch write` in it needs no flags'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "fence" -d 'Fence your own database: install, protect tables, status, seal, uninstall (PostgreSQL or SQLite)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "completions" -d 'Print a shell completion script (e.g. `fencewatch completions bash > /etc/bash_completion.d/fencewatch`)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "man" -d 'Print the manual page (roff), e.g. `fencewatch man | man -l -`; with `--dir DIR`, write it and one page per subcommand (`fencewatch-serve.1`, …) into DIR instead'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and not __fish_seen_subcommand_from serve lease tui demo audit bench write lock fence completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from lease" -f -a "acquire" -d 'Take the lease: prints it with its new generation (the fencing token)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from lease" -f -a "renew" -d 'Extend the current grant'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from lease" -f -a "release" -d 'End the current grant early'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from lease" -f -a "show" -d 'Show the lease\'s holder, generation and expiry'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "report" -d 'The postmortem of one incident (an id from `incidents`): the stale owner\'s pause, its grant\'s lapse, the successor\'s takeover and first write, the refused attempts and any write accepted after the lapse, with the condensed history around it'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "summary" -d 'Incidents since a time: counts per owner and resource, pause and zombie-lifetime percentiles, writes accepted after a lapse'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "verify" -d 'Check every resource\'s hash chain, that no row lacks a place in one, and that each resource\'s stored state is what its audit records; report the first broken link of each (exit 1 if any)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "keygen" -d 'Make an Ed25519 key pair for a witnessed audit: FILE (private, readable by its owner only) and FILE.pub (docs/guarantees.md)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "witness" -d 'Verify the rows written since the last signed checkpoint and sign the next one, printed as one JSON line (append it to the witness file) and kept in the database: a witness for a daemon started without --audit-signing-key, run from cron. Exit 1, signing nothing, when the audit no longer holds what the last checkpoint did'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "log" -d 'Audit rows, newest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "export" -d 'Every matching row with every field, streamed (constant memory)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "incidents" -d 'Ownership-overlap incidents with their generations, owners, counts and times: the latest 100 by default, oldest of them first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "timeline" -d 'A resource\'s writes and its leases\' history interleaved: who held which generation when, and the value before and after each accepted write (its latest 200 rows on unless a window or --all is given)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "refusals" -d 'Requests refused before the fence (no or a wrong API key, a key\'s scopes, a foreign origin or Host, too many refusals), aggregated per source, reason and 10 s interval, oldest first'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from audit" -f -a "prune" -d 'Delete rows older than a time behind per-resource checkpoints (what `--audit-retention` does in the daemon)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "install" -d 'Install the fence, or upgrade it to this fencewatch\'s version (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "protect" -d 'Fence writes to a table: an INSERT or UPDATE whose token is below its scope\'s highest accepted generation affects zero rows, and every attempt is audited'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "unprotect" -d 'Remove the fence\'s trigger from a table (the table is otherwise left as it is)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "status" -d 'The installed version, protected tables, counts, and whether refusals survive a rollback'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "uninstall" -d 'Remove everything install and protect created, and nothing else (idempotent)'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "reset" -d 'Set a scope\'s highest accepted generation by hand (the way back from a runaway token), audited in the scope\'s chain with outcome `reset`'
complete -c fencewatch -n "__fish_fencewatch_using_subcommand help; and __fish_seen_subcommand_from fence" -f -a "seal" -d 'SQLite: hash-chain the audit rows written since the last seal (PostgreSQL hashes each row as it writes it)'

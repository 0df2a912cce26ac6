// A private Postfix for bench/postfix.ts and bench/direct.ts: Debian's package (installed when
// missing), run as its own instance with its own configuration and queue under a temporary
// directory, listening on 127.0.0.1 only and relaying everything to one host and port (the bench's
// sink), or delivering to recipients' MX hosts through the bench's DNS server (with a tuning
// added to its main.cf and master.cf when given). Its queue files are synced before it answers
// 250, as a stock Postfix does. Nothing is delivered locally.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const sudo = process.getuid?.() === 0 ? [] : ['sudo'];

function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const [bin, ...rest] = [...sudo, cmd, ...args];
  return execFileSync(bin, rest, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();
}

/** Installs Debian's postfix when `postfix` is not on the machine ("No configuration": no system mail). */
export function ensurePostfix() {
  if (existsSync('/usr/sbin/postfix')) return 'already installed';
  run('sh', [
    '-c',
    'echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections',
  ]);
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', 'postfix'], { DEBIAN_FRONTEND: 'noninteractive' });
  return 'installed now';
}

// the services a relay-only Postfix needs, none chrooted (the chroot would need copies of /etc files);
// tlsmgr too, or the smtp client finds no entropy for TLS and sends in the clear
const MASTER = (listen: string) => `
${listen} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
postlog   unix-dgram n  -       n       -       1       postlogd
`;

export interface PostfixInstance {
  port: number;
  /** Holds new mail in the hold queue (accept only) or lets it flow to the relay. */
  setHeld(held: boolean): void;
  /** Deletes everything queued. */
  purge(): void;
  stop(): void;
}

/**
 * How the instance sends mail on: to one relay (127.0.0.1:`relayPort`, no DNS), or straight to
 * recipients' MX hosts found through the DNS server of `resolvConf` (bind-mounted over
 * /etc/resolv.conf in a mount namespace of its own, so the machine's resolver is untouched), from
 * `bindAddress` saying `heloName`, retrying deferred mail every `retrySeconds` at first.
 */
export type PostfixOut =
  | { relayPort: number }
  | {
      resolvConf: string;
      bindAddress: string;
      heloName: string;
      retrySeconds: number;
      tuning?: PostfixTuning;
    };

/**
 * What a postmaster adds to a stock instance: lines for main.cf and master.cf, and files written
 * beside them (main.cf names them as `$config_directory/<name>`).
 */
export interface PostfixTuning {
  main: string;
  master: string;
  files: Record<string, string>;
}

/** Starts a private Postfix on 127.0.0.1:`port`, relaying to 127.0.0.1:`out` or (an object) delivering by DNS. */
export function startPostfix(port: number, out: number | PostfixOut): PostfixInstance {
  const way: PostfixOut = typeof out === 'number' ? { relayPort: out } : out;
  const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-postfix-'));
  const etc = path.join(dir, 'etc');
  const queue = path.join(dir, 'spool');
  const data = path.join(dir, 'data');
  for (const d of [etc, queue, data]) mkdirSync(d, { recursive: true });
  // the postfix user walks to its queue and owns its data directory
  chmodSync(dir, 0o755);
  run('chown', ['postfix:postfix', data]);
  // `postfix -c` wants the default configuration to name the alternate one; Debian's "No
  // configuration" install has no main.cf, so a minimal one that listens nowhere is written
  if (!existsSync('/etc/postfix/main.cf'))
    writeFileSync('/etc/postfix/main.cf', 'compatibility_level = 3.6\nmaster_service_disable = inet\n');
  const mainCf = (held: boolean) => `
compatibility_level = 3.6
queue_directory = ${queue}
data_directory = ${data}
mail_owner = postfix
setgid_group = postdrop
myhostname = postfix.bench.invalid
mydomain = bench.invalid
myorigin = $myhostname
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
${
  'relayPort' in way
    ? `relayhost = [127.0.0.1]:${way.relayPort}
smtp_dns_support_level = disabled
smtp_host_lookup = native`
    : `smtp_dns_support_level = enabled
smtp_host_lookup = dns
smtp_bind_address = ${way.bindAddress}
smtp_helo_name = ${way.heloName}
smtp_tls_security_level = may
minimal_backoff_time = ${way.retrySeconds}s
maximal_backoff_time = ${way.retrySeconds * 8}s
queue_run_delay = ${way.retrySeconds}s
${way.tuning?.main ?? ''}`
}
default_process_limit = 200
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
in_flow_delay = 0
default_destination_concurrency_limit = 20
smtputf8_enable = no
biff = no
maillog_file_prefixes = ${dir}
maillog_file = ${path.join(dir, 'maillog')}
${held ? `header_checks = regexp:${path.join(etc, 'hold')}` : ''}
`;
  writeFileSync(path.join(etc, 'main.cf'), mainCf(false));
  // held: the cleanup daemon files each message straight into the hold queue (synced, then 250)
  writeFileSync(path.join(etc, 'hold'), '/^Subject:/ HOLD\n');
  const tuning = 'tuning' in way ? way.tuning : undefined;
  writeFileSync(path.join(etc, 'master.cf'), MASTER(`127.0.0.1:${port}`) + (tuning?.master ?? ''));
  for (const [name, text] of Object.entries(tuning?.files ?? {})) writeFileSync(path.join(etc, name), text);
  run('postconf', ['-e', `alternate_config_directories = ${etc}`]);
  if ('resolvConf' in way)
    // the master and every daemon it forks see the bench's resolver; the machine keeps its own
    run('unshare', [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `mount --bind ${way.resolvConf} /etc/resolv.conf && postfix -c ${etc} start`,
    ]);
  else run('postfix', ['-c', etc, 'start']);
  return {
    port,
    setHeld(held) {
      writeFileSync(path.join(etc, 'main.cf'), mainCf(held));
      run('postfix', ['-c', etc, 'reload']);
    },
    purge() {
      run('postsuper', ['-c', etc, '-d', 'ALL']);
    },
    stop() {
      try {
        run('postfix', ['-c', etc, 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

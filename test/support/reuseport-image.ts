// A test image for rolls under load: two instances of one HTTP server sharing one host port (SO_REUSEPORT). No registry
// is reachable, so it is `docker import`ed once per machine, as keystone-test/busybox:1 is (test/support/busybox-image.ts):
// a rootfs of the host's static busybox plus a small perl HTTP server. Perl itself is not in the image: the container
// mounts the host's /usr read-only (REUSEPORT_USR_MOUNT), and the rootfs has the links a merged-/usr Debian expects
// (lib -> usr/lib, lib64 -> usr/lib64), so /usr/bin/perl (perl-base, always there on Debian) and its libc resolve.
import { spawnSync } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureRootfsImage } from './rootfs-image.js';

export const REUSEPORT_IMAGE = 'keystone-test/reuseport:1';
/** The server's path inside the image. */
export const REUSEPORT_SERVER = '/srv/reuseport-http.pl';
/** The host's /usr, read-only: where /usr/bin/perl and its libraries come from. */
export const REUSEPORT_USR_MOUNT = { source: '/usr', target: '/usr', read_only: true } as const;

const APPLETS = ['sh', 'sleep', 'true', 'false', 'cat', 'echo', 'ls'] as const;

/**
 * `perl REUSEPORT_SERVER PORT VERSION`: HTTP/1.0 on 127.0.0.1:PORT with SO_REUSEADDR and SO_REUSEPORT, so that a second
 * instance can listen beside the first. `GET /` answers `200` with `VERSION\n` (which instance answered);
 * `GET /ready/VERSION` answers 200 only from the instance of that VERSION (404 from another one), so that a health
 * check on the shared port proves that *this* instance listens. Every response closes its connection.
 *
 * SIGTERM is a graceful stop, as a real server's. Closing a SO_REUSEPORT listener resets the connections still in its
 * accept queue (unless net.ipv4.tcp_migrate_req is 1; it is 0 by default), and the kernel keeps placing new connections
 * on it until the close, so "accept until EAGAIN, then close" still loses the odd connection that lands in between
 * (measured here: 3 resets in 150 rolls under a request loop; 2 in 11 with no SIGTERM handling at all). So the server
 * first steers the group's new connections to the other listener (a one-instruction classic BPF program,
 * SO_ATTACH_REUSEPORT_CBPF: "return 1", the newer member), answers what still reaches it until 100 ms pass without a
 * new connection (2 s at most), drains its accept queue, and only then closes (0 resets in 150 rolls). SIGTERM also
 * interrupts the reads of a request being answered (EINTR): those go on, so that request is answered too.
 */
export const REUSEPORT_SERVER_SCRIPT = String.raw`use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Errno qw(EINTR EAGAIN EWOULDBLOCK);
use Socket qw(SOL_SOCKET);
# <asm-generic/socket.h> and <linux/filter.h>: a classic BPF program that picks the group's listener by index.
use constant { SO_ATTACH_REUSEPORT_CBPF => 51, SO_DETACH_REUSEPORT_BPF => 68, BPF_RET_K => 0x06 };
my ($port, $version) = @ARGV;
die "usage: $0 PORT VERSION\n" unless defined $version;
$| = 1;
my $stop = 0;
$SIG{TERM} = sub { $stop = 1 };
$SIG{PIPE} = 'IGNORE';
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port, Proto => 'tcp', Listen => 1024, ReuseAddr => 1, ReusePort => 1)
  or die "listen on 127.0.0.1:$port: $!\n";
# The group's members are indexed in joining order (a leaver's slot goes to the last one): during a roll the old
# listener is 0 and the new one 1. A steering program left by the previous roll's old listener is dropped here.
setsockopt($l, SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, pack('i', 0));
print "$version listening on 127.0.0.1:$port\n";
my $served = 0;
sub answer {
  my ($c) = @_;
  $c->blocking(1);
  my ($buf, $sel, $until) = ('', IO::Select->new($c), time + 3);
  while ($buf !~ /\r?\n\r?\n/) {
    my $left = $until - time;
    last if $left <= 0;
    # SIGTERM interrupts select (EINTR): go on reading; the request is answered before the stop.
    unless ($sel->can_read($left)) { next if $! == EINTR; last }
    my $n = sysread($c, $buf, 4096, length $buf);
    next if !defined $n && $! == EINTR;
    last unless $n;
  }
  my ($path) = $buf =~ m{^GET (\S+)};
  my ($code, $body) = !defined $path ? (400, "bad request\n")
    : $path eq '/' ? (200, "$version\n")
    : $path eq "/ready/$version" ? (200, "ready $version\n")
    : (404, "not $version\n");
  my $out = "HTTP/1.0 $code X\r\nContent-Type: text/plain\r\nContent-Length: " . length($body) . "\r\nConnection: close\r\n\r\n$body";
  while (length $out) {
    my $n = syswrite($c, $out);
    next if !defined $n && $! == EINTR;
    last unless $n;
    substr($out, 0, $n) = '';
  }
  close $c;
  $served++;
}
until ($stop) {
  my $c = $l->accept;
  answer($c) if $c;
}
# Stop taking new connections: steer the group's new connections to the other listener (index 1: the newer one, see
# above), answer whatever still arrives here until a quiet spell, then drain the accept queue and close.
my $prog = pack('S C C L', BPF_RET_K, 0, 0, 1); # one instruction: return 1
my $steered = setsockopt($l, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, pack('S x![P] P8', 1, $prog)) ? 1 : 0;
warn "$version: cannot steer new connections away ($!); closing anyway\n" unless $steered;
my ($lsel, $quit, $late) = (IO::Select->new($l), time + 2, 0);
while ($steered && time < $quit && $lsel->can_read(0.1)) {
  my $c = $l->accept;
  if ($c) { answer($c); $late++ }
}
$l->blocking(0);
for (;;) {
  my $c = $l->accept;
  if ($c) { answer($c); $late++; next }
  last if $! == EAGAIN || $! == EWOULDBLOCK;
  next if $! == EINTR;
  last;
}
close $l;
print "$version stopped on SIGTERM: $served answered, $late after the SIGTERM\n";
exit 0;
`;

/** The container command that serves `version` on 127.0.0.1:`port` (with REUSEPORT_USR_MOUNT among the mounts). */
export function reuseportCommand(port: number, version: string): string[] {
  return ['/usr/bin/perl', REUSEPORT_SERVER, String(port), version];
}

/** Can this host lend its perl to the image (Debian's perl-base, with SO_REUSEPORT)? */
export function hostPerlAvailable(): boolean {
  return (
    spawnSync('/usr/bin/perl', ['-MSocket=SO_REUSEPORT', '-MIO::Socket::INET', '-MIO::Select', '-e', '1'], {
      stdio: 'ignore',
      timeout: 10_000,
    }).status === 0
  );
}

/** Builds `keystone-test/reuseport:1` unless the engine has it already (see ensureRootfsImage). */
export function ensureReuseportImage(timeoutMs = 60_000): Promise<string> {
  return ensureRootfsImage(
    {
      tag: REUSEPORT_IMAGE,
      applets: APPLETS,
      dirs: ['srv', 'usr'],
      path: '/bin:/usr/bin',
      describe: REUSEPORT_SERVER_SCRIPT,
      fill: async (root) => {
        // Merged /usr: the mounted /usr/bin/perl asks for /lib64/ld-linux-*.so.2 and /lib/<triplet>/libc.so.6.
        await symlink('usr/lib', join(root, 'lib'));
        await symlink('usr/lib64', join(root, 'lib64'));
        await writeFile(join(root, REUSEPORT_SERVER), REUSEPORT_SERVER_SCRIPT, { mode: 0o644 });
      },
    },
    timeoutMs,
  );
}

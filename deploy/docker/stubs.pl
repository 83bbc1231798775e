#!/usr/bin/perl
# The Dockerfile's dependency layer: runs `cargo metadata --no-deps` on the workspace at SRC and
# writes, under OUT, every package's Cargo.toml, the workspace's
# Cargo.lock and one stub source file at the path of every target the manifests declare (or
# cargo discovers): empty for libraries, `fn main() {}` for binaries, examples, tests, benches
# and build scripts. Building OUT compiles the dependencies alone; the next target declared in a
# Cargo.toml gets its stub here without a change to the Dockerfile. Every file and directory
# gets the modification time 0, so the same manifests give byte-identical stubs (the layer cache
# of the `COPY --from=stubs` that follows depends on the manifests and the lock file alone).
#   perl stubs.pl SRC OUT
use strict;
use warnings;
use JSON::PP;
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Find qw(find);
use File::Path qw(make_path);

@ARGV == 2 or die "usage: stubs.pl SRC OUT\n";
my ($src, $out) = @ARGV;
open(my $cm, '-|', 'cargo', 'metadata', '--no-deps', '--format-version', '1', '--manifest-path', "$src/Cargo.toml")
  or die "stubs.pl: cargo metadata: $!\n";
my $meta = decode_json(do { local $/; <$cm> });
close($cm) or die "stubs.pl: cargo metadata failed\n";
my $root = $meta->{workspace_root};
my $rel = sub {
    my ($p) = @_;
    index($p, "$root/") == 0 or die "stubs.pl: $p is outside the workspace $root\n";
    return substr($p, length($root) + 1);
};
my $put = sub {
    my ($path, $text) = @_;
    make_path(dirname("$out/$path"));
    open(my $f, '>', "$out/$path") or die "stubs.pl: $out/$path: $!\n";
    print $f $text;
    close($f);
};

make_path($out);
copy("$root/Cargo.lock", "$out/Cargo.lock") or die "stubs.pl: Cargo.lock: $!\n";
copy("$root/Cargo.toml", "$out/Cargo.toml") or die "stubs.pl: Cargo.toml: $!\n";
my $n = 0;
for my $pkg (@{ $meta->{packages} }) {
    my $manifest = $rel->($pkg->{manifest_path});
    make_path(dirname("$out/$manifest"));
    copy($pkg->{manifest_path}, "$out/$manifest") or die "stubs.pl: $manifest: $!\n";
    for my $t (@{ $pkg->{targets} }) {
        my $lib = grep { /^(lib|rlib|dylib|cdylib|staticlib|proc-macro)$/ } @{ $t->{kind} };
        $put->($rel->($t->{src_path}), $lib ? "" : "fn main() {}\n");
        $n++;
    }
}
find({ no_chdir => 1, wanted => sub { utime(0, 0, $File::Find::name) } }, $out);
printf STDERR "stubs.pl: %d packages, %d target stubs\n", scalar @{ $meta->{packages} }, $n;

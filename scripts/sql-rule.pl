#!/usr/bin/env perl
# Used by scripts/lint: prints every line of the Swift files given that writes a hand-numbered
# SQL parameter (`$1` inside a string literal) or decodes a column by position (`decode(0)`).
# Statements bind values by interpolation (`PostgresQuery`) and read columns through `ColumnSet`,
# so numbers never have to be kept in step by hand. Swift's closure arguments (`$0`) are code,
# not string contents, and string interpolations (`\(...)`) are skipped.
use strict;
use warnings;

my ($file, $inBlock) = ('', 0);
while (my $line = <>) {
    if ($ARGV ne $file) { ($file, $inBlock) = ($ARGV, 0); }
    (my $text = $line) =~ s/\\\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)//g;
    my $literal = '';
    if ($inBlock) {
        if ($text =~ /^(.*?)"""/) { $literal = $1; $inBlock = 0; } else { $literal = $text; }
    } else {
        if ($text =~ s/"""\s*$//) { $inBlock = 1; }
        while ($text =~ /"((?:[^"\\]|\\.)*)"/g) { $literal .= " $1"; }
    }
    print "$ARGV:$.: $line" if $literal =~ /\$[0-9]/ || $text =~ /\bdecode\(\s*[0-9]/;
} continue {
    close ARGV if eof;
}

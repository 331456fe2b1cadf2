// Package safeprint prints what a page, a site or an extension sent without
// letting it harm the reader: JSON indented within bounded memory and
// output, and text with the characters that drive a terminal made visible.
//
// Anything a program prints from a page, a site or an extension is
// untrusted: a title can carry an escape sequence that clears the screen or
// forges a line of the program's own output, and an answer nested ten
// thousand deep can make json.Indent allocate gigabytes. Print it through
// this package: the text of agentproto's tool results and the output of
// every example CLI (agentctl, browserhub, webagents, weboperator-host, the
// demo) do.
//
//	out := safeprint.NewWriter(os.Stdout)
//	fmt.Fprintf(out, "title: %s\n", safeprint.Line(page.Title))
//	_ = safeprint.Indent(out, answer, nil)
//	_ = out.Flush()
//
// The functions and a [Writer]'s methods are safe for concurrent use.
//
// # JSON
//
// [Indent], [AppendIndent] and [IndentString] print JSON as json.Indent
// does with two spaces, byte for byte, for answers within the limits. They
// read the input in one pass with no recursion and no stack (the input is
// first checked with json.Valid, whose stack encoding/json bounds at
// 10,000 levels, 8 bytes each), so a hostile answer cannot make them grow
// with the square of its depth as json.Indent does: depth d costs d×d
// spaces there, and json.Indent allocated 1.4 GB for 20 KB nested 10,000
// deep, 6.5 GB for 1 MiB nested 1,000 deep. Limits:
//
//   - Containers nested deeper than [DefaultMaxDepth] (64) levels are
//     printed compactly, as json.Compact would, on the line of the member
//     that holds them: the output stays valid JSON and each line is
//     indented by at most 128 spaces.
//   - The output stops at [DefaultMaxBytes] (16 MiB, cut at a character
//     boundary) and ends with a line saying how many of the input's bytes
//     were not shown. [Indent] writes through a 4 KiB buffer, so its memory
//     does not depend on the output's size; [AppendIndent] and
//     [IndentString] measure the output first and allocate it once.
//
// # Text
//
// [Writer] and [Line] make visible the C0 control characters, DEL, the C1
// control characters, the bidirectional embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069) and the bytes that are not
// UTF-8, as escapes that JSON and Go read alike (\u001b, \u009b, \r; a
// byte that is not UTF-8 as \xff, which only Go reads), so that JSON
// printed through them stays JSON. An escape sequence from a page cannot
// clear the screen, write the clipboard (OSC 52), hide a link (OSC 8) or
// reorder what the reader sees. A [Writer] keeps
// newlines and tabs, for text bodies; [Line] escapes them too, for
// single-line fields (titles, URLs, names), so that a page cannot forge a
// line of the CLI's own. A [Writer] is correct for writes that split a
// UTF-8 sequence: it holds the sequence's first bytes until the rest
// arrives (the writer it replaced turned an "é" so split into two U+FFFD).
package safeprint

package webagents

import (
	"bytes"
	"regexp"
	"strings"
)

// fencedBlocks returns the contents of every fenced code block of a
// CommonMark document whose info string is "webagents" or "webagents-json"
// (case-insensitive, nothing else on the fence line). Fences of other
// languages are skipped whole, so a webagents fence quoted inside another
// block does not count. unterminated reports a webagents fence left open at
// the end of the document; its content is not returned.
func fencedBlocks(doc []byte) (blocks [][]byte, unterminated bool) {
	var (
		inFence    bool
		fenceChar  byte
		fenceLen   int
		collecting bool
		start      int // offset of the first content line of the block
	)
	for pos := 0; pos < len(doc); {
		end := bytes.IndexByte(doc[pos:], '\n')
		next := len(doc)
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(doc)
		}
		line := bytes.TrimSuffix(doc[pos:end], []byte("\r"))
		lineStart := pos
		pos = next
		if !inFence {
			c, n, info, ok := openingFence(line)
			if !ok {
				continue
			}
			inFence, fenceChar, fenceLen = true, c, n
			collecting = isWebAgentsInfo(info)
			start = next
			continue
		}
		if closingFence(line, fenceChar, fenceLen) {
			if collecting {
				blocks = append(blocks, doc[start:lineStart])
			}
			inFence, collecting = false, false
		}
	}
	return blocks, inFence && collecting
}

// fenceIndent strips up to three leading spaces; ok is false for a line
// indented by four or more (an indented code block, not a fence).
func fenceIndent(line []byte) ([]byte, bool) {
	for i := 0; i < 4; i++ {
		if i == len(line) || line[i] != ' ' {
			return line[i:], true
		}
	}
	return nil, false
}

func openingFence(line []byte) (c byte, n int, info string, ok bool) {
	rest, ok := fenceIndent(line)
	if !ok || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return 0, 0, "", false
	}
	c = rest[0]
	for n < len(rest) && rest[n] == c {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	infoBytes := rest[n:]
	if c == '`' && bytes.IndexByte(infoBytes, '`') >= 0 {
		return 0, 0, "", false // not a fence: inline code
	}
	return c, n, strings.TrimSpace(string(infoBytes)), true
}

func closingFence(line []byte, c byte, n int) bool {
	rest, ok := fenceIndent(line)
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] == c {
		i++
	}
	return i >= n && len(bytes.TrimSpace(rest[i:])) == 0
}

func isWebAgentsInfo(info string) bool {
	return strings.EqualFold(info, "webagents") || strings.EqualFold(info, "webagents-json")
}

// referenceFence is how the originating client (BetterWright's
// webagents.ts) finds the manifest in a markdown document: the first
// ```webagents or ```webagents-json (backticks only, case-insensitive,
// anywhere, even inside another block) up to the next ``` (anywhere, even
// inside a JSON string). JavaScript's \s is approximated with its Unicode
// white space.
var referenceFence = regexp.MustCompile("(?is)```(?:webagents|webagents-json)" + jsSpaceClass + "*\n(.*?)```")

const jsSpaceClass = `[\t\n\v\f\r \x{00A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

// isJSSpace reports the white space JavaScript's String.prototype.trim
// removes.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s []byte) []byte { return bytes.TrimFunc(s, isJSSpace) }

// referenceBlock returns the manifest text the originating client reads
// from a markdown document, trimmed, or false when it finds none.
func referenceBlock(doc []byte) ([]byte, bool) {
	m := referenceFence.FindSubmatch(jsTrim(doc))
	if m == nil {
		return nil, false
	}
	return jsTrim(m[1]), true
}

// utf16Len is the length JavaScript's String.prototype.length gives: code
// points, plus one for each outside the Basic Multilingual Plane.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

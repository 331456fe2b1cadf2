package webagents

import (
	"bytes"
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

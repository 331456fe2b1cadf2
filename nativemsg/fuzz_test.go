package nativemsg

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

func FuzzReader(f *testing.F) {
	f.Add(frame(`{"kind":"bridge:hello"}`))
	f.Add(append(frame(`{"a":1}`), frame(`[1,2]`)...))
	f.Add(frame(`"日本語"`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{', '}'})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{3, 0, 0})
	f.Add(frame("not json"))
	f.Add(binary.LittleEndian.AppendUint32(frame(`{}`), 2000))
	const limit = 1024
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := NewReader(bytes.NewReader(stream), &ReaderOptions{MaxFrameSize: limit})
		for range 64 {
			body, err := r.ReadMessage(nil)
			if err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					return
				}
				continue // bad frames are reported and skipped, or the error sticks
			}
			if len(body) > limit || cap(body) > limit {
				t.Fatalf("read a %d-byte body (capacity %d) past the %d-byte limit", len(body), cap(body), limit)
			}
			// Whatever was read writes back as the same frame.
			var out bytes.Buffer
			if err := NewWriter(&out, &WriterOptions{MaxFrameSize: limit}).WriteMessage(body); err != nil {
				t.Fatalf("writing back a read body: %v", err)
			}
			again, err := NewReader(&out, nil).ReadMessage(nil)
			if err != nil || !bytes.Equal(again, body) {
				t.Fatalf("round trip changed the body: %q → %q (%v)", body, again, err)
			}
		}
	})
}

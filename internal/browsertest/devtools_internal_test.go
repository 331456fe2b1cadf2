package browsertest

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzReadMessage: whatever comes down the DevTools pipe, readMessage
// returns NUL-free messages no larger than the limit, or an error.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("{\"id\":1,\"result\":{}}\x00"))
	f.Add([]byte("{\"method\":\"Target.targetCreated\"}\x00{\"id\":2}\x00"))
	f.Add([]byte("no terminator"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		for {
			msg, err := readMessage(br)
			if err != nil {
				return
			}
			if bytes.IndexByte(msg, 0) >= 0 || len(msg) > maxDevToolsMessage {
				t.Fatalf("bad message %q", msg)
			}
		}
	})
}

func TestReadMessageLimit(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, maxDevToolsMessage+1)
	_, err := readMessage(bufio.NewReader(bytes.NewReader(append(big, 0))))
	assert.ErrorContains(t, err, "larger than", "a message over the limit is refused")
	msg, err := readMessage(bufio.NewReader(bytes.NewReader([]byte("{}\x00rest"))))
	require.NoError(t, err)
	assert.Equal(t, "{}", string(msg))
}

package peakmem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sink keeps the allocation below alive until the peak is read.
var sink []byte

func TestPeakSeesAnAllocation(t *testing.T) {
	before, err := Peak()
	if err != nil {
		t.Skipf("no peak on %s: %v", runtime.GOOS, err)
	}
	const size = 64 << 20
	sink = make([]byte, size)
	for i := 0; i < len(sink); i += 4096 {
		sink[i] = 1 // resident only once written
	}
	after, err := Peak()
	require.NoError(t, err)
	sink = nil
	assert.GreaterOrEqual(t, after, before+size/2, "a 64 MiB buffer written shows in the peak")

	require.NoError(t, Check(after+1<<30))
	err = Check(after / 2)
	var over *OverError
	require.ErrorAs(t, err, &over)
	assert.Equal(t, after/2, over.Limit)
	assert.GreaterOrEqual(t, over.Peak, after)
	assert.Contains(t, err.Error(), "over the limit of")
}

// TestPeakIsVmHWM: on Linux the peak is the kernel's high-water mark of
// the resident set, as /proc/self/status shows it.
func TestPeakIsVmHWM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/status is Linux's")
	}
	got, err := Peak()
	require.NoError(t, err)
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			require.NoError(t, err)
			assert.InDelta(t, float64(n<<10), float64(got), 16<<20)
			return
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "512.0 MiB", Format(512<<20))
	assert.Equal(t, "2.0 GiB", Format(2<<30))
	assert.Equal(t, "1.5 GiB", Format(3<<29))
}

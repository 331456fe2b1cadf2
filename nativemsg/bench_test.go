package nativemsg

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

var benchSizes = []int{1 << 10, 64 << 10}

func jsonBody(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

// loopReader serves the same bytes forever without allocating.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func BenchmarkWriteMessage(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			body := jsonBody(size)
			w := NewWriter(io.Discard, nil)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := w.WriteMessage(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadMessage(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			r := NewReader(&loopReader{data: frame(string(jsonBody(size)))}, nil)
			buf := make([]byte, 0, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				body, err := r.ReadMessage(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				buf = body
			}
		})
	}
}

// BenchmarkPipe64KiB moves 64 KiB frames through an in-memory pipe
// (io.Pipe, one goroutine writing, the benchmark reading), framed with this
// package and, for comparison in the same run, as the same bytes moved by a
// bare io.Copy (io.CopyN into io.Discard) and by one io.ReadFull per frame.
func BenchmarkPipe64KiB(b *testing.B) {
	body := jsonBody(64 << 10)
	framed := frame(string(body))

	run := func(b *testing.B, write func(w io.Writer) error, read func(r io.Reader) error) {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if write(pw) != nil {
					return
				}
			}
		}()
		b.ReportAllocs()
		b.SetBytes(int64(len(framed)))
		for b.Loop() {
			if err := read(pr); err != nil {
				b.Fatal(err)
			}
		}
		pr.Close()
		<-done
	}

	b.Run("framed", func(b *testing.B) {
		var w *Writer
		r := (*Reader)(nil)
		buf := make([]byte, 0, len(body))
		run(b, func(pw io.Writer) error {
			if w == nil {
				w = NewWriter(pw, nil)
			}
			return w.WriteMessage(body)
		}, func(pr io.Reader) error {
			if r == nil {
				r = NewReader(pr, nil)
			}
			got, err := r.ReadMessage(buf[:0])
			buf = got
			return err
		})
	})
	b.Run("io.Copy", func(b *testing.B) {
		run(b, func(pw io.Writer) error {
			_, err := pw.Write(framed)
			return err
		}, func(pr io.Reader) error {
			_, err := io.CopyN(io.Discard, pr, int64(len(framed)))
			return err
		})
	})
	b.Run("io.ReadFull", func(b *testing.B) {
		dst := make([]byte, len(framed))
		run(b, func(pw io.Writer) error {
			_, err := pw.Write(framed)
			return err
		}, func(pr io.Reader) error {
			_, err := io.ReadFull(pr, dst)
			return err
		})
	})
}

// BenchmarkOSPipeCloseInterruptsRead measures how long a read blocked on
// OSPipe takes to return once its Conn is closed (the goal: well under
// 100 ms).
func BenchmarkOSPipeCloseInterruptsRead(b *testing.B) {
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		host, browser, err := OSPipe()
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			host.ReadMessage(nil)
			close(done)
		}()
		time.Sleep(time.Millisecond) // let the read block first
		start := time.Now()
		host.Close()
		<-done
		total += time.Since(start)
		browser.Close()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/close-to-return")
}

package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agentbridge/agentbridge/internal/extension"
)

// ErrNoDevTools is returned by the Browser methods that need the DevTools
// protocol when Options.DevTools was not set.
var ErrNoDevTools = errors.New("browsertest: the browser was launched without Options.DevTools")

// maxDevToolsMessage bounds one message read from Chromium's DevTools
// pipe.
const maxDevToolsMessage = 16 << 20

// devtools is a client of the DevTools protocol over the pipe Chromium
// opens with --remote-debugging-pipe: it writes commands to Chromium's
// file descriptor 3 and reads answers and events from its descriptor 4,
// each message JSON ended by a NUL byte. Events are dropped.
type devtools struct {
	w *os.File // our end of Chromium's fd 3
	r *os.File // our end of Chromium's fd 4

	writeMu sync.Mutex
	mu      sync.Mutex
	next    int
	pending map[int]chan devtoolsAnswer
	readErr error
	done    chan struct{} // closed when the reader has returned
}

type devtoolsAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// devtoolsPipes makes the two pipes and returns Chromium's ends, for
// exec.Cmd.ExtraFiles (they become its fds 3 and 4), and the client that
// owns the other ends. The caller closes Chromium's ends once it started,
// then calls start.
func devtoolsPipes() (childFiles []*os.File, d *devtools, err error) {
	toChromeR, toChromeW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("browsertest: %w", err)
	}
	fromChromeR, fromChromeW, err := os.Pipe()
	if err != nil {
		toChromeR.Close()
		toChromeW.Close()
		return nil, nil, fmt.Errorf("browsertest: %w", err)
	}
	d = &devtools{w: toChromeW, r: fromChromeR, pending: make(map[int]chan devtoolsAnswer), done: make(chan struct{})}
	return []*os.File{toChromeR, fromChromeW}, d, nil
}

// start runs the reader until the pipe ends (Chromium exited or close).
func (d *devtools) start() {
	go d.read()
}

func (d *devtools) read() {
	defer close(d.done)
	br := bufio.NewReader(d.r)
	var err error
	for {
		var msg []byte
		if msg, err = readMessage(br); err != nil {
			break
		}
		var head struct {
			ID *int `json:"id"`
			devtoolsAnswer
		}
		if json.Unmarshal(msg, &head) != nil || head.ID == nil {
			continue // an event, or noise
		}
		d.mu.Lock()
		ch := d.pending[*head.ID]
		delete(d.pending, *head.ID)
		d.mu.Unlock()
		if ch != nil {
			ch <- head.devtoolsAnswer
		}
	}
	d.mu.Lock()
	d.readErr = err
	for id, ch := range d.pending {
		close(ch)
		delete(d.pending, id)
	}
	d.mu.Unlock()
}

// readMessage reads one NUL-ended message of at most maxDevToolsMessage
// bytes.
func readMessage(br *bufio.Reader) ([]byte, error) {
	var msg []byte
	for {
		chunk, err := br.ReadSlice(0)
		msg = append(msg, chunk...)
		if len(msg) > maxDevToolsMessage {
			return nil, fmt.Errorf("browsertest: a DevTools message is larger than %d bytes", maxDevToolsMessage)
		}
		switch {
		case err == nil:
			return msg[:len(msg)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// call sends one command and decodes its result into result (which may
// be nil).
func (d *devtools) call(ctx context.Context, method string, params, result any) error {
	ch := make(chan devtoolsAnswer, 1)
	d.mu.Lock()
	if d.readErr != nil {
		d.mu.Unlock()
		return fmt.Errorf("browsertest: DevTools pipe closed: %w", d.readErr)
	}
	d.next++
	id := d.next
	d.pending[id] = ch
	d.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("browsertest: %w", err)
	}
	d.writeMu.Lock()
	_, err = d.w.Write(append(msg, 0))
	d.writeMu.Unlock()
	if err != nil {
		d.forget(id)
		return fmt.Errorf("browsertest: DevTools %s: %w", method, err)
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return fmt.Errorf("browsertest: DevTools %s: the pipe closed", method)
		}
		if a.Error != nil {
			return fmt.Errorf("browsertest: DevTools %s: %s", method, a.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(a.Result, result); err != nil {
				return fmt.Errorf("browsertest: DevTools %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		d.forget(id)
		return ctx.Err()
	}
}

func (d *devtools) forget(id int) {
	d.mu.Lock()
	delete(d.pending, id)
	d.mu.Unlock()
}

// close closes our ends of the pipes and waits for the reader.
func (d *devtools) close() {
	d.w.Close()
	d.r.Close()
	<-d.done
}

// workerURL is the reference extension's service worker script.
var workerURL = "chrome-extension://" + extension.ID + "/background.js"

// StopExtensionWorker stops the reference extension's service worker the
// way Chrome stops an idle one, so that a test can check what survives:
// its native port closes (the host sees EOF) and its WebSocket drops, and
// the worker runs again when one of its events (its 30 s alarm) fires. It
// needs Options.DevTools; it returns an error when the worker is not
// running.
func (b *Browser) StopExtensionWorker(ctx context.Context) error {
	if b.devtools == nil {
		return ErrNoDevTools
	}
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	if err := b.devtools.call(ctx, "Target.getTargets", map[string]any{}, &targets); err != nil {
		return err
	}
	for _, t := range targets.TargetInfos {
		if t.Type == "service_worker" && t.URL == workerURL {
			return b.devtools.call(ctx, "Target.closeTarget", map[string]any{"targetId": t.TargetID}, nil)
		}
	}
	return fmt.Errorf("browsertest: the extension's service worker is not running")
}

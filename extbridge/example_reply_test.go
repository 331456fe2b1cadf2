package extbridge_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// echoBackend answers every panel message with a turn: the user's message
// echoed, then a reply. It never holds the hub: each message brings the
// Reply its turn runs on.
type echoBackend struct {
	extbridge.BaseBackend
}

func (echoBackend) UserMessage(_ context.Context, m extbridge.UserMessage, reply *extbridge.Reply) error {
	return reply.StartTurn(m.ThreadID, m.RunID, func(ctx context.Context, t *extbridge.Turn) error {
		if err := t.Echo(ctx, m.MessageID, m.Content); err != nil {
			return err
		}
		return t.Say(ctx, m.MessageID+"-reply", "you said: "+m.Content)
	})
}

// The Backend is built before the hub and replies through the Reply of
// each message; Close (or Shutdown) waits for the reply turns it started.
func ExampleReply_StartTurn() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{Backend: echoBackend{}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ctx := context.Background()
	ext, err := extbridgetest.Connect(ctx, hub, &extbridgetest.Options{Token: token, Protocol: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	// The panel sends a message (protocol 2: a run_agent_input).
	if err := ext.RunInput(ctx, "conversation-1", "hello"); err != nil {
		log.Fatal(err)
	}
	if _, err := ext.NextOfType(ctx, "RUN_FINISHED"); err != nil {
		log.Fatal(err)
	}
	for _, f := range ext.Received() {
		if f.IsEvent() {
			var ev struct{ Type, Role, Delta string }
			if err := f.Decode(&ev); err != nil {
				log.Fatal(err)
			}
			line := ev.Type
			if ev.Role != "" {
				line += " " + ev.Role
			}
			if ev.Delta != "" {
				line += fmt.Sprintf(" %q", ev.Delta)
			}
			fmt.Println(line)
		}
	}
	// Output:
	// RUN_STARTED
	// TEXT_MESSAGE_START user
	// TEXT_MESSAGE_CONTENT "hello"
	// TEXT_MESSAGE_END
	// TEXT_MESSAGE_START assistant
	// TEXT_MESSAGE_CONTENT "you said: hello"
	// TEXT_MESSAGE_END
	// RUN_FINISHED
}

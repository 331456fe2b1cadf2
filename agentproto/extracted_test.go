package agentproto_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extractedShapes are what the extension stores in a step's result: a list
// of elements from an extract step, an object from a sheet step, a string,
// a list of other values, null, and nothing.
var extractedShapes = []struct {
	name, extracted string
	items           []agentproto.ExtractedItem
	notItems        bool
}{
	{"elements", `[{"ref":"@e1","text":"42 EUR","href":"https://a.example/"}]`, []agentproto.ExtractedItem{{Ref: "@e1", Text: "42 EUR", Href: "https://a.example/"}}, false},
	{"object", `{"rows":[{"name":"A","price":1}],"sheet":"Prices"}`, nil, true},
	{"string", `"just text"`, nil, true},
	{"list of strings", `["a","b"]`, nil, true},
	{"null", `null`, nil, false},
	{"absent", ``, nil, false},
}

func taskWith(extracted string) string {
	result := `{"ok":true,"durationMs":3}`
	if extracted != "" {
		result = `{"ok":true,"durationMs":3,"extracted":` + extracted + `}`
	}
	return `{"id":"t1","goal":"g","status":"done","steps":[{"id":"s1","index":0,"status":"ok","result":` + result + `}]}`
}

// TestStepExtractedShapes: GetTask, WaitTask and Event.Decode take any JSON
// in a step's extracted (they failed on anything but a list of elements),
// keep it as sent, and ExtractedItems reads the common list.
func TestStepExtractedShapes(t *testing.T) {
	for _, shape := range extractedShapes {
		t.Run(shape.name, func(t *testing.T) {
			task := taskWith(shape.extracted)
			b, _ := recordingBridge(t, func(r *agentprototest.Request) (any, error) { return json.RawMessage(task), nil })
			c, err := b.Dial(t.Context(), nil)
			require.NoError(t, err)
			defer c.Close()
			check := func(how string, step agentproto.Step) {
				require.NotNil(t, step.Result, how)
				if shape.extracted == "" {
					assert.Empty(t, step.Result.Extracted, how)
				} else {
					assert.JSONEq(t, shape.extracted, string(step.Result.Extracted), how)
				}
				items, err := step.Result.ExtractedItems()
				if shape.notItems {
					assert.ErrorIs(t, err, agentproto.ErrNotExtractedItems, how)
				} else {
					assert.NoError(t, err, how)
				}
				assert.Equal(t, shape.items, items, how)
			}

			got, err := c.GetTask(t.Context(), "t1")
			require.NoError(t, err)
			require.Len(t, got.Steps, 1)
			check("GetTask", got.Steps[0])

			waited, err := c.WaitTask(t.Context(), agentproto.WaitParams{ID: "t1", TimeoutMs: 1000})
			require.NoError(t, err)
			require.Len(t, waited.Steps, 1)
			check("WaitTask", waited.Steps[0])

			var stepRaw json.RawMessage
			var whole struct {
				Steps []json.RawMessage `json:"steps"`
			}
			require.NoError(t, json.Unmarshal([]byte(task), &whole))
			stepRaw = whole.Steps[0]
			for kind, raw := range map[agentproto.EventKind]string{
				agentproto.EventTaskStep:   `{"kind":"task:step","taskId":"t1","step":` + string(stepRaw) + `}`,
				agentproto.EventTaskUpdate: `{"kind":"task:update","task":` + task + `}`,
			} {
				v, err := agentproto.Event{Kind: kind, Raw: json.RawMessage(raw)}.Decode()
				require.NoError(t, err, kind)
				switch ev := v.(type) {
				case *agentproto.TaskStepEvent:
					check(string(kind), ev.Step)
				case *agentproto.TaskUpdateEvent:
					require.Len(t, ev.Task.Steps, 1)
					check(string(kind), ev.Task.Steps[0])
				}
			}
		})
	}
}

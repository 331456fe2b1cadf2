package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

func benchDocs() map[string][]byte {
	str := []byte(`{"kind":"bridge:response","id":"7","result":{"ref":"@e1","text":"` + string(bytes.Repeat([]byte("x"), 64<<10)) + `"}}`)
	b64 := []byte(`{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,` + string(bytes.Repeat([]byte("QUJD"), 1<<18)) + `"}`)
	var nodes []map[string]any
	for i := range 2000 {
		nodes = append(nodes, map[string]any{"ref": fmt.Sprintf("@e%d", i), "role": "button", "name": "Añadir al carrito ✓", "bbox": map[string]int{"x": i, "y": 2 * i, "w": 100, "h": 20}, "inViewport": i%2 == 0})
	}
	snap, _ := json.Marshal(map[string]any{"kind": "snapshot", "snapshot": map[string]any{"nodes": nodes}})
	return map[string][]byte{"string64KiB": str, "base64-1MiB": b64, "snapshot": snap}
}

func BenchmarkValid(b *testing.B) {
	for name, doc := range benchDocs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Valid(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

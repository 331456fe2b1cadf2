package agentproto

// HealthResult is bridge.health's result.
type HealthResult struct {
	OK           bool   `json:"ok"`
	Bridge       string `json:"bridge"`    // "online"
	Extension    string `json:"extension"` // "online" or "offline"
	AuthRequired bool   `json:"authRequired"`
}

// ExtensionOnline reports whether Extension is "online".
func (h *HealthResult) ExtensionOnline() bool { return h.Extension == "online" }

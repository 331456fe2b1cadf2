package bridge

// QueuedBytes returns the bytes waiting to be written to all of s's
// clients together, as its MaxTotalQueuedBytes budget counts them.
func QueuedBytes(s *Server) int64 { return s.budget.Used() }

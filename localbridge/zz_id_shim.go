package localbridge

// Temporary until the persistent bridge ID lands.

func (s *Server) ID() string { return "" }

func ReadBridgeID(root string) (string, error) { return "", nil }

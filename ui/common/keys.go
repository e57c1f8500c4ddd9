package common

import "github.com/charmbracelet/bubbles/key"

type keyBinding = key.Binding

// Package config reads sandscope's YAML configuration file ($XDG_CONFIG_HOME/sandscope/config.yaml)
// and resolves the effective settings from defaults, that file, the environment and command-line
// flags, remembering where every value came from so `sandscope config` can show it.
//
// Every problem in the file is reported with the file name, the line and what is wrong; unknown keys
// and wrong types are errors, never silently ignored. The package must never reveal a bridge token:
// tokens are obtained only on request (Effective.Token), never stored in the Effective settings,
// never printed, logged or put into an error message, and a token written inline in the file is
// refused unless the file is private (mode 0600). Token commands run with a timeout and without a
// shell unless the configuration explicitly asks for one (a string tokenCommand runs as `sh -c`).
package config

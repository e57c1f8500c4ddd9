package cmdutil

import (
	"os"

	"sandscope/config"
	"sandscope/otlpexport"
)

// OTLPSettings resolves the OpenTelemetry export from the configuration file's otlp: section and
// the standard OTEL_* variables (which win); output asks for captured output lines too
// (--otlp-output). Enabled is false when no endpoint is set anywhere.
func OTLPSettings(cfg *config.Config, output bool) (otlpexport.Resolved, error) {
	var file otlpexport.Settings
	if cfg != nil && cfg.OTLP != nil {
		o := cfg.OTLP
		file = otlpexport.Settings{Endpoint: o.Endpoint, TracesEndpoint: o.TracesEndpoint, LogsEndpoint: o.LogsEndpoint,
			Headers: o.Headers, ServiceName: o.ServiceName, Output: o.Output}
	}
	file.Output = file.Output || output
	return otlpexport.Resolve(file, os.LookupEnv)
}

package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// OTLP is `otlp:`: where sandscope exports its record over OpenTelemetry (OTLP/HTTP). The
// standard OTEL_EXPORTER_OTLP_* variables win over it, as for every OpenTelemetry SDK.
type OTLP struct {
	// Endpoint is the collector's base URL (http://collector:4318): /v1/traces and /v1/logs are
	// appended. TracesEndpoint and LogsEndpoint are used as given.
	Endpoint       string
	TracesEndpoint string
	LogsEndpoint   string
	// Headers are sent with every export request (an API key). Values are never printed, and
	// only a private (0600) file may hold them.
	Headers     map[string]string
	ServiceName string // service.name (default "sandscope"; OTEL_SERVICE_NAME wins)
	Output      bool   // export captured output lines as log records
	Line        int
}

var otlpKeys = []string{"endpoint", "headers", "logsEndpoint", "output", "serviceName", "tracesEndpoint"}

// otlp reads `otlp:`.
func (p *parser) otlp(c *Config, v *yaml.Node) *OTLP {
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "otlp must be a mapping (endpoint: http://collector:4318, …), not %s", kindName(v))
		return nil
	}
	o := &OTLP{Line: v.Line}
	sawEndpoint := false
	for _, kv := range pairs(p, v) {
		k, val := kv.key, kv.value
		c.lines["otlp."+k.Value] = k.Line
		switch k.Value {
		case "endpoint", "tracesEndpoint", "logsEndpoint":
			sawEndpoint = true
			s, ok := p.str("otlp."+k.Value, val)
			if !ok {
				continue
			}
			if err := CheckURL(s); err != nil {
				p.errorf(val.Line, "otlp.%s: %v", k.Value, err)
				continue
			}
			switch k.Value {
			case "endpoint":
				o.Endpoint = s
			case "tracesEndpoint":
				o.TracesEndpoint = s
			default:
				o.LogsEndpoint = s
			}
		case "serviceName":
			if s, ok := p.str("otlp.serviceName", val); ok {
				if strings.TrimSpace(s) == "" {
					p.errorf(val.Line, "otlp.serviceName must not be empty")
				}
				o.ServiceName = s
			}
		case "output":
			if val.Kind != yaml.ScalarNode || val.Tag != "!!bool" {
				p.errorf(val.Line, "otlp.output must be true or false, not %s", kindName(val))
				continue
			}
			o.Output = val.Value == "true"
		case "headers":
			o.Headers = p.otlpHeaders(c, k, val)
		default:
			p.errorf(k.Line, "unknown otlp setting %q (known: %s)", k.Value, strings.Join(otlpKeys, ", "))
		}
	}
	if (o.TracesEndpoint == "") != (o.LogsEndpoint == "") && o.Endpoint == "" {
		p.errorf(o.Line, "otlp: set endpoint, or both tracesEndpoint and logsEndpoint")
	}
	if !sawEndpoint {
		p.errorf(o.Line, "otlp: no endpoint (set endpoint: http://collector:4318, or leave otlp out and use OTEL_EXPORTER_OTLP_ENDPOINT)")
	}
	return o
}

// otlpHeaders reads otlp.headers: name → value. Values are never echoed, and the file must be
// private to hold them (they are usually API keys).
func (p *parser) otlpHeaders(c *Config, k, v *yaml.Node) map[string]string {
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "otlp.headers must be a mapping of header name: value, not %s", kindName(v))
		return nil
	}
	if c.Mode&0o077 != 0 {
		p.errorf(k.Line, "otlp.headers in the file needs the file to be private: it is mode %04o, run `chmod 600 %s` (or set OTEL_EXPORTER_OTLP_HEADERS)", c.Mode, p.file)
		return nil
	}
	out := map[string]string{}
	for _, kv := range pairs(p, v) {
		name := kv.key.Value
		if !validHeaderName(name) {
			p.errorf(kv.key.Line, "otlp.headers: %q is not a header name (letters, digits and - only)", truncate(name, 40))
			continue
		}
		if kv.value.Kind != yaml.ScalarNode || kv.value.Tag != "!!str" || kv.value.Value == "" || strings.ContainsAny(kv.value.Value, "\r\n") {
			// the value is not echoed: it is usually a key
			p.errorf(kv.value.Line, "otlp.headers.%s must be a non-empty single-line string", name)
			continue
		}
		out[name] = kv.value.Value
	}
	return out
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

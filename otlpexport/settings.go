package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"sandscope/record"
)

// DefaultServiceName is service.name when neither OTEL_SERVICE_NAME nor the configuration says.
const DefaultServiceName = "sandscope"

// Settings are where the export goes, as the configuration file's `otlp:` says. The standard
// variables win over it, as they do for every OpenTelemetry SDK: OTEL_EXPORTER_OTLP_ENDPOINT (a
// base URL: /v1/traces and /v1/logs are appended), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT (used as given), OTEL_EXPORTER_OTLP_HEADERS and the per-signal
// _HEADERS, _TIMEOUT, _COMPRESSION and _CERTIFICATE (read by the exporters), OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES; OTEL_SDK_DISABLED=true turns the export off.
type Settings struct {
	Endpoint       string
	TracesEndpoint string
	LogsEndpoint   string
	// Headers are sent with every request (an API key, say). Their values are never printed.
	Headers     map[string]string
	ServiceName string
	// Output sends captured output lines as log records (also --otlp-output).
	Output bool
}

// Resolved is the export's effective configuration.
type Resolved struct {
	Enabled    bool
	TracesURL  string
	LogsURL    string
	Output     bool
	headers    map[string]string // the file's, when no header variable is set
	service    string
	fromEnvURL bool
}

// Resolve combines the file's settings with the environment (lookup: os.LookupEnv).
func Resolve(file Settings, lookup func(string) (string, bool)) (Resolved, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := func(k string) string {
		if v, ok := lookup(k); ok {
			return strings.TrimSpace(v)
		}
		return ""
	}
	r := Resolved{Output: file.Output, service: file.ServiceName}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return r, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"} {
		if p := env(k); p != "" && p != "http/protobuf" {
			return r, fmt.Errorf("%s=%s: sandscope exports over OTLP/HTTP with protobuf (http/protobuf) only", k, p)
		}
	}
	base, tr, lg := file.Endpoint, file.TracesEndpoint, file.LogsEndpoint
	if v := env("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		base, tr, lg, r.fromEnvURL = v, "", "", true
	}
	if v := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		tr, r.fromEnvURL = v, true
	}
	if v := env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"); v != "" {
		lg, r.fromEnvURL = v, true
	}
	if tr == "" && base != "" {
		tr = strings.TrimRight(base, "/") + "/v1/traces"
	}
	if lg == "" && base != "" {
		lg = strings.TrimRight(base, "/") + "/v1/logs"
	}
	if tr == "" && lg == "" {
		return r, nil
	}
	if tr == "" || lg == "" {
		return r, errors.New("otlp: set both a traces and a logs endpoint, or one base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or otlp.endpoint)")
	}
	for _, u := range []string{tr, lg} {
		if err := CheckEndpoint(u); err != nil {
			return r, err
		}
	}
	r.Enabled, r.TracesURL, r.LogsURL = true, tr, lg
	if env("OTEL_EXPORTER_OTLP_HEADERS") == "" && env("OTEL_EXPORTER_OTLP_TRACES_HEADERS") == "" && env("OTEL_EXPORTER_OTLP_LOGS_HEADERS") == "" {
		r.headers = file.Headers
	}
	return r, nil
}

// CheckEndpoint says what is wrong with an OTLP/HTTP endpoint URL (nothing of it is echoed
// beyond its scheme: a URL may carry credentials).
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("otlp: an endpoint is not an absolute URL (http://host:4318 or https://…)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("otlp: an endpoint's scheme is %q; use http or https (OTLP/HTTP)", u.Scheme)
	}
	return nil
}

// PositionName keys the export's position in the record: the traces endpoint without
// credentials, query or fragment.
func (r Resolved) PositionName() string { return "otlp " + record.NormalizeURL(r.TracesURL) }

// Describe says where the export goes, for a notice (no credentials, no header values).
func (r Resolved) Describe() string {
	return fmt.Sprintf("%s and %s", record.NormalizeURL(r.TracesURL), record.NormalizeURL(r.LogsURL))
}

// Exporters makes the OTLP/HTTP exporters. Their own retry is off: the export retries from its
// saved position, so that nothing is dropped after the exporters' retry budget.
func (r Resolved) Exporters(ctx context.Context) (sdktrace.SpanExporter, sdklog.Exporter, error) {
	topts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(r.TracesURL), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
	lopts := []otlploghttp.Option{otlploghttp.WithEndpointURL(r.LogsURL), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
	if len(r.headers) > 0 {
		topts = append(topts, otlptracehttp.WithHeaders(r.headers))
		lopts = append(lopts, otlploghttp.WithHeaders(r.headers))
	}
	t, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, nil, fmt.Errorf("otlp traces exporter: %w", err)
	}
	l, err := otlploghttp.New(ctx, lopts...)
	if err != nil {
		_ = t.Shutdown(ctx)
		return nil, nil, fmt.Errorf("otlp logs exporter: %w", err)
	}
	return t, l, nil
}

// Resource describes this sandscope: service.name (OTEL_SERVICE_NAME, else the file's, else
// "sandscope"), service.version, host.name, and OTEL_RESOURCE_ATTRIBUTES.
func (r Resolved) Resource(ctx context.Context, version string) (*resource.Resource, error) {
	name := r.service
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", name), attribute.String("service.version", version)),
		resource.WithHost(),
		resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otlp resource: %w", err)
	}
	return res, nil
}

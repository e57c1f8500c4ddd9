package config

import (
	"strings"
	"testing"
)

func TestOTLPSettings(t *testing.T) {
	c, err := Parse("/c.yaml", 0o600, []byte("otlp:\n  endpoint: http://collector:4318\n  serviceName: agents\n  output: true\n  headers:\n    x-api-key: k3y-value\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := c.OTLP
	if o == nil || o.Endpoint != "http://collector:4318" || o.ServiceName != "agents" || !o.Output || o.Headers["x-api-key"] != "k3y-value" {
		t.Fatalf("otlp = %+v", o)
	}
}

func TestOTLPErrorsHaveLinesAndNeverEchoHeaderValues(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"headers in a shared file", "otlp:\n  endpoint: http://c:4318\n  headers:\n    x-api-key: s3cret\n", "/c.yaml:3: otlp.headers in the file needs the file to be private"},
		{"bad scheme", "otlp:\n  endpoint: grpc://c:4317\n", "/c.yaml:2: otlp.endpoint: url \"grpc://c:4317\" must start with http:// or https://"},
		{"credentials", "otlp:\n  endpoint: http://user:s3cret@c:4318\n", "/c.yaml:2: otlp.endpoint: url must not carry credentials"},
		{"unknown key", "otlp:\n  endpoint: http://c:4318\n  protocol: grpc\n", "/c.yaml:3: unknown otlp setting \"protocol\""},
		{"output not a bool", "otlp:\n  endpoint: http://c:4318\n  output: yes please\n", "/c.yaml:3: otlp.output must be true or false"},
		{"no endpoint", "otlp:\n  serviceName: x\n", "/c.yaml:2: otlp: no endpoint"},
		{"one signal only", "otlp:\n  tracesEndpoint: http://c:4318/v1/traces\n", "/c.yaml:2: otlp: set endpoint, or both tracesEndpoint and logsEndpoint"},
		{"not a mapping", "otlp: http://c:4318\n", "/c.yaml:1: otlp must be a mapping"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/c.yaml", 0o644, []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("a secret in the error: %v", err)
			}
		})
	}
	// a private file may hold headers, but a bad value is still not echoed
	_, err := Parse("/c.yaml", 0o600, []byte("otlp:\n  endpoint: http://c:4318\n  headers:\n    x-api-key: [s3cret]\n"))
	if err == nil || !strings.Contains(err.Error(), "/c.yaml:4: otlp.headers.x-api-key must be a non-empty single-line string") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v", err)
	}
}

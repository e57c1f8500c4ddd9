// Package reliability holds the evidence that sandscope keeps its promise ("what you see is what
// happened") when the network and the platform misbehave: a fault matrix run against the real local
// bridge through a fault-injecting proxy, a soak test (build tag soak), security checks of the local
// bridge and of the sanitiser, and fuzz targets for the decoders that face untrusted bytes.
//
// Everything here is tests. It runs only on loopback, starts only processes of its own, and must never
// be imported by the product: it holds no code the product runs, and it never prints, logs or stores a
// bridge token.
package reliability

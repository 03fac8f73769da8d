module github.com/meridian-gslb/meridian

go 1.26.8

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/miekg/dns v1.1.73
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/maxmind/mmdbwriter v1.2.0 // indirect
	github.com/oschwald/maxminddb-golang/v2 v2.9.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	go4.org/netipx v0.0.0-20231129151722-fdeea329fbba // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

package cffake

import "strings"

// Cloudflare's Load Balancing regions (region_pools keys, check_regions):
// the enum of the API schema (load-balancing_region_code) and the Regions
// API page of the Load Balancing docs.
var lbRegions = map[string]bool{
	"WNAM": true, "ENAM": true, "WEU": true, "EEU": true, "NSAM": true, "SSAM": true,
	"OC": true, "ME": true, "NAF": true, "SAF": true, "SAS": true, "SEAS": true, "NEAS": true,
}

// countryRegion maps a country to its Cloudflare region, for geo steering
// in Resolve. Cloudflare publishes the mapping only through its Regions
// API (GET /accounts/{id}/load_balancers/regions), which this fake cannot
// query; this table is the fake's reading of the region names (Western
// Europe, Eastern Europe, …) and is an approximation at the borders.
// Every country in the list above has a region. The United States and
// Canada span two regions: see subdivisionRegion.
var countryRegion = func() map[string]string {
	m := map[string]string{}
	for region, list := range map[string]string{
		"WEU":  "AD AT AX BE CH DE DK ES FI FO FR GB GG GI IE IM IS IT JE LI LU MC MT NL NO PT SE SJ SM VA",
		"EEU":  "AL BA BG BY CY CZ EE GR HR HU LT LV MD ME MK PL RO RS RU SI SK UA XK",
		"ME":   "AE AM AZ BH GE IL IQ IR JO KW LB OM PS QA SA SY TR YE",
		"NAF":  "BF BJ CI CV DJ DZ EG EH ER ET GH GM GN GW LR LY MA ML MR NE NG SD SL SN SO SS TD TG TN",
		"SAF":  "AO BI BV BW CD CF CG CM GA GQ KE KM LS MG MU MW MZ NA RE RW SC SH ST SZ TF TZ UG YT ZA ZM ZW",
		"SAS":  "AF BD BT IN IO KG KZ LK MV NP PK TJ TM UZ",
		"SEAS": "BN ID KH LA MM MY PH SG TH TL VN",
		"NEAS": "CN HK JP KP KR MN MO TW",
		"OC":   "AQ AS AU CC CK CX FJ FM GU HM KI MH MP NC NF NR NU NZ PF PG PN PW SB TK TO TV UM VU WF WS",
		"WNAM": "BZ CR GT HN MX NI PA SV",
		"ENAM": "AG AI AW BB BL BM BQ BS CA CU CW DM DO GD GL GP HT JM KN KY LC MF MQ MS PM PR SX TC TT US VC VG VI",
		"NSAM": "CO EC GF GY PE SR VE",
		"SSAM": "AR BO BR CL FK GS PY UY",
	} {
		for c := range setOf(list) {
			m[c] = region
		}
	}
	return m
}()

// subdivisionRegion splits the United States and Canada (ISO 3166-2
// subdivisions, as the Regions API does): these states and provinces are
// Western North America, the others Eastern (the table's reading, as
// above). A US or CA client without a subdivision is taken as ENAM.
var subdivisionRegion = func() map[string]string {
	m := map[string]string{}
	for _, s := range strings.Fields("US-AK US-AZ US-CA US-CO US-HI US-ID US-MT US-NM US-NV US-OR US-UT US-WA US-WY CA-AB CA-BC CA-NT CA-NU CA-YT") {
		m[s] = "WNAM"
	}
	return m
}()

// Client is a simulated client of Resolve.
type Client struct {
	Country     string // ISO 3166-1 alpha-2 code, e.g. "DE" ("": unknown, default pools)
	Subdivision string // ISO 3166-2 subdivision for US and CA clients, e.g. "CA" (California: WNAM)
	Region      string // a Cloudflare region overriding the fake's table, e.g. "WEU"
}

// RegionOf returns the Cloudflare region the fake places a client in: c.Region
// when set, else the subdivision's (US and CA), else the country's ("" when
// the country is unknown).
func RegionOf(c Client) string {
	if c.Region != "" {
		return strings.ToUpper(c.Region)
	}
	country := strings.ToUpper(c.Country)
	if c.Subdivision != "" && (country == "US" || country == "CA") {
		if r, ok := subdivisionRegion[country+"-"+strings.ToUpper(c.Subdivision)]; ok {
			return r
		}
	}
	return countryRegion[country]
}

func setOf(list string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(list) {
		m[f] = true
	}
	return m
}

// Package datasets holds the data files fineserve-gen ships in its binary:
// FineServe's per-class Gamma window and NB micro-burst parameters, and
// request-length pairs (see README.md in this directory for sources and
// licences).
package datasets

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed Parametric/gamma/*.csv Parametric/nb/*.json lengths/*.csv
var files embed.FS

// Classes are the model classes with bundled parametric data, in FineServe's
// spelling.
var Classes = []string{"Dense_lt10B", "Dense_10to30B", "Dense_30to100B", "MoE_gt100B"}

// FS returns the bundled files, laid out as FineServe's datasets/Parametric
// (Parametric/gamma, Parametric/nb) plus lengths/.
func FS() fs.FS { return files }

// CheckClass reports whether class is one of Classes.
func CheckClass(class string) error {
	if slices.Contains(Classes, class) {
		return nil
	}
	return fmt.Errorf("model class %q: want one of %s", class, strings.Join(Classes, ", "))
}

// GammaPath is the bundled Gamma window file of class, relative to a
// parametric data root (FineServe's layout).
func GammaPath(class string) string { return "gamma/" + class + "_gamma_5min.csv" }

// NBPath is the bundled NB micro-burst file of class, relative to a
// parametric data root.
func NBPath(class string) string { return "nb/" + class + "_nb.json" }

// Gamma returns the bundled Gamma window CSV of class and its name.
func Gamma(class string) (data []byte, name string, err error) {
	if err := CheckClass(class); err != nil {
		return nil, "", err
	}
	name = "Parametric/" + GammaPath(class)
	data, err = files.ReadFile(name)
	return data, "bundled " + name, err
}

// NB returns the bundled NB JSON of class; ok is false when the class has
// none (only Dense_lt10B has one).
func NB(class string) (data []byte, name string, ok bool) {
	name = "Parametric/" + NBPath(class)
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, "", false
	}
	return data, "bundled " + name, true
}

// Lengths returns the bundled input_length,output_length CSV of class; ok is
// false when the class has none (only Dense_30to100B has one).
func Lengths(class string) (data []byte, name string, ok bool) {
	name = "lengths/" + class + "_lengths.csv"
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, "", false
	}
	return data, "bundled " + name, true
}

//go:build race

package advantage

const raceEnabled = true

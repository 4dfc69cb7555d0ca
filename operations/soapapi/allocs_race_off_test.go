//go:build !race

package soapapi

import "testing"

// Allocation budgets per in-process call (allocs_test.go): what the hot
// path reached, plus a small margin for the rare pool refill. Raise one
// only in the commit that needs it, saying why.
const (
	allocBudgetTouch                 = 35
	allocBudgetPaymentStatus         = 166
	allocBudgetCreatePayment         = 497
	allocBudgetCreatePaymentRepeated = 359
)

func skipAllocsUnderRace(*testing.T) {}

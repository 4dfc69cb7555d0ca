// Package sandbox is an in-memory payment gateway that speaks the REST
// interface of the real one (the server side of package restbackend), so the
// bridge, its tests and a developer work offline. It keeps everything in
// memory; a restart forgets all payments.
//
// # Endpoints
//
// REST, under /api (bearer token from the token call on every call but it):
//
//	POST /api/oauth2/token                                      Basic client id:secret; grant_type, scope
//	POST /api/payments/payment                                  create (scope payment-create or payment-all)
//	GET  /api/payments/payment/{id}                             status
//	POST /api/payments/payment/{id}/refund                      form amount
//	GET  /api/payments/payment/{id}/refunds                     refund history
//	POST /api/payments/payment/{id}/create-recurrence           ON_DEMAND follow-up: replied CREATED, charged right after
//	POST /api/payments/payment/{id}/void-recurrence
//	POST /api/payments/payment/{id}/capture                     no body: whole; JSON amount/items: partial
//	POST /api/payments/payment/{id}/void-authorization
//	GET  /api/eshops/eshop/{goid}/payment-instruments/{currency}
//	POST /api/accounts/account-statement                        CSV_A, CSV_B
//
// The customer's side:
//
//	GET|POST /gw/v3/{token}     gw_url: the payment page (CS/SK in Czech, otherwise English)
//	GET /gp-gw/js/embed.js      inline variant: opens gw_url in an overlay
//	GET /gp-gw/images/{code}.svg, {code}@2x.svg   instrument and bank logos
//
// Test helpers (no authentication; JSON bodies optional):
//
//	POST /sandbox/payments/{id}/pay     {"outcome":"success"|"declined"|"3ds_failed","instrument":"PAYMENT_CARD","swift":"KOMBCZPP","card":"4188030000000003"}
//	POST /sandbox/payments/{id}/wait    offline transfer chosen (_102); with an online swift or another instrument: _101
//	POST /sandbox/payments/{id}/cancel  the customer cancels
//	GET  /sandbox/payments/{id}         the status reply of any payment
//	POST /sandbox/clock/advance         {"seconds":N}: moves the clock and runs what became due
//	GET  /sandbox/clock                 {"now":"…"}
//
// Go tests use Gateway.Act (same as the helpers), a ManualClock (its Advance
// runs what became due before returning) and Gateway.RunDue.
//
// With a ManualClock nothing happens by itself: a test makes the scheduler
// pass run with clock.Advance(d) (Advance(0) runs what is due now),
// g.RunDue() or POST /sandbox/clock/advance {"seconds":0}. With real time
// (Options.Clock nil) a scheduler runs every second and right after an
// ON_DEMAND create-recurrence reply.
//
// # Life cycle
//
//	CREATED ─pay card/wallet──────────▶ PAID (card: payer.payment_card)
//	        ─pay bank button──────────▶ PAID _3001 (payer.bank_account)
//	        ─pay, preauthorization────▶ AUTHORIZED ─capture──▶ PAID (amount = captured)
//	                                               ─void-authorization, or 4 days──▶ CANCELED
//	        ─wait (offline transfer)──▶ PAYMENT_METHOD_CHOSEN _102 ─pay──▶ PAID _3001
//	        ─card declined / 3DS──────▶ CANCELED _5006 / _5009 (bank refused: _3003)
//	        ─cancel───────────────────▶ CANCELED
//	        ─7 days unpaid────────────▶ TIMEOUTED
//	PAID ─refund part──▶ PARTIALLY_REFUNDED ─refund rest──▶ REFUNDED
//
// Recurring payments start (recurrence_state STARTED) when the initiating
// payment is paid; DAY/WEEK/MONTH charge child payments (parent_id, PAID by
// the stored card) every period × cycle after that, while the charge falls
// on or before recurrence_date_to (Prague), then STOPPED. ON_DEMAND
// create-recurrence answers the child CREATED (parent_id, PAYMENT_CARD), as
// the real gateway does, and schedules the charge of the stored card as due
// at once: the next scheduler pass makes the child PAID (with its card) and
// notifies its id. void-recurrence stops at once. Every change of state or sub-state, and every refund, is announced to
// notification_url with id added (GET), repeated until the merchant answers
// 200, at most 20 calls (about 24 h with the default backoff).
//
// Refusals answer the real service's error list with these codes: 100
// internal error (500), 110 mandatory, 111 wrong format, 116 invalid request
// (malformed JSON, unknown action, refund above the rest: all 409), 200
// unauthorised (401 token missing/invalid/expired, 403 scope or foreign
// goid/payment), 202 wrong credentials (401), 303 wrong state (409; a refused
// refund is named PAYMENT_REFUND_NOT_SUPPORTED), 304 not found (404), 330
// recurrence, 340 capture, 350 void of authorization (409).
package sandbox

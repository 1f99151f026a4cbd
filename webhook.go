package trove

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Webhooks: a workspace's HTTPS endpoints that Trove notifies of changes
// (docs/webhooks.md). The wire is the official SDK's
// Beta.Organizations.Webhooks (/v1/organizations/webhooks); deliveries are
// Standard Webhooks messages that the SDK's Beta.Webhooks.Unwrap verifies.

// Webhook ID prefixes.
const (
	PrefixWebhook      = "whep_" // an endpoint
	PrefixWebhookEvent = "whe_"  // an event (the webhook-id of its deliveries)
)

// WebhookOrganizationID is the organization_id of every event Trove sends:
// a Trove deployment is one organization.
const WebhookOrganizationID = "org_trove"

// The event types Trove emits. The first groups are the SDK's own
// (BetaWebhookEventDataUnion); the trove.memory.* types are Trove's
// extension, one per version in a store's history (the change feed).
const (
	HookMemoryStoreCreated  = "memory_store.created"
	HookMemoryStoreArchived = "memory_store.archived"
	HookMemoryStoreDeleted  = "memory_store.deleted"

	HookSessionCreated           = "session.created"
	HookSessionUpdated           = "session.updated"
	HookSessionArchived          = "session.archived"
	HookSessionDeleted           = "session.deleted"
	HookSessionStatusRunStarted  = "session.status_run_started"
	HookSessionStatusIdled       = "session.status_idled"
	HookSessionStatusRescheduled = "session.status_rescheduled"
	HookSessionStatusTerminated  = "session.status_terminated"

	HookAgentCreated  = "agent.created"
	HookAgentUpdated  = "agent.updated"
	HookAgentArchived = "agent.archived"

	HookEnvironmentCreated  = "environment.created"
	HookEnvironmentUpdated  = "environment.updated"
	HookEnvironmentArchived = "environment.archived"
	HookEnvironmentDeleted  = "environment.deleted"

	HookMemoryCreated = "trove.memory.created"
	HookMemoryUpdated = "trove.memory.updated"
	HookMemoryDeleted = "trove.memory.deleted"
)

// WebhookEventTypes lists every type an endpoint may subscribe to: the
// types the official SDK defines (Trove emits those of the resources it
// has, see the Hook constants; the others are accepted and never sent)
// and Trove's trove.memory.* extension.
var WebhookEventTypes = []string{
	"session.created", "session.pending", "session.running", "session.idled",
	"session.requires_action", "session.archived", "session.deleted",
	"session.status_rescheduled", "session.status_run_started",
	"session.status_idled", "session.status_terminated", "session.thread_created",
	"session.thread_idled", "session.thread_terminated",
	"session.outcome_evaluation_ended", "vault.created", "vault.archived",
	"vault.deleted", "vault_credential.created", "vault_credential.archived",
	"vault_credential.deleted", "vault_credential.refresh_failed",
	"session.updated", "agent.created", "agent.archived", "agent.deleted",
	"deployment.paused", "deployment_run.failed", "deployment.created",
	"deployment.updated", "deployment.unpaused", "agent.updated",
	"deployment.archived", "deployment_run.started", "deployment.deleted",
	"deployment_run.succeeded", "environment.created", "environment.updated",
	"environment.archived", "environment.deleted", "memory_store.created",
	"memory_store.archived", "memory_store.deleted", "session.budget_reached",
	"user_profile.enforcement_action_opened",
	"user_profile.enforcement_action_resolved",
	"user_profile.program_status_updated", "external_key.failed",
	"external_key.recovered", "external_storage.failed",
	"external_storage.recovered",
	HookMemoryCreated, HookMemoryUpdated, HookMemoryDeleted,
}

// IsWebhookEventType reports whether t is in WebhookEventTypes.
func IsWebhookEventType(t string) bool { return slices.Contains(WebhookEventTypes, t) }

// IsTroveEventType reports whether t is one of Trove's extension types.
func IsTroveEventType(t string) bool { return strings.HasPrefix(t, "trove.") }

// WebhookState says whether deliveries are sent to an endpoint.
type WebhookState string

const (
	WebhookEnabled  WebhookState = "enabled"
	WebhookDisabled WebhookState = "disabled"
)

// MaxWebhooksPerWorkspace bounds a workspace's endpoints, enabled or
// disabled (the hosted API's bound for an organization).
const MaxWebhooksPerWorkspace = 32

// Webhook is an endpoint deliveries are sent to. It belongs to a workspace
// and sees that workspace's events only. Its signing secret is never part
// of it: it is returned once, by CreateWebhook and RegenerateWebhookSecret.
type Webhook struct {
	ID             string // whep_…
	WorkspaceID    string
	Name           string // "" when none was given
	Description    string // "" when none was given
	URL            string
	EnabledEvents  []string
	State          WebhookState
	DisabledReason string // "" unless Trove disabled it (it never does yet)
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"   // not yet acknowledged; retried
	DeliveryDelivered DeliveryStatus = "delivered" // a 2xx answer
	DeliveryFailed    DeliveryStatus = "failed"    // gave up after the last attempt
)

// WebhookDelivery is one event queued for one endpoint, and the outcome
// of its attempts so far. Payload is the exact body sent on every attempt.
type WebhookDelivery struct {
	Seq           int64 // the queue's order: an endpoint's deliveries are sent by Seq
	WebhookID     string
	EventID       string // whe_…: the webhook-id header; the same on every attempt
	EventType     string
	Payload       []byte
	CreatedAt     time.Time
	Status        DeliveryStatus
	Attempts      int
	NextAttemptAt time.Time // when the next attempt is due (pending only)
	LastAttemptAt *time.Time
	LastStatus    int    // HTTP status of the last attempt; 0 when none answered
	LastError     string // why the last attempt failed; "" after a success
	DeliveredAt   *time.Time
}

// CreateWebhookParams creates an endpoint.
type CreateWebhookParams struct {
	URL           string
	EnabledEvents []string // at least one, each in WebhookEventTypes
	Name          string
	Description   string
}

// UpdateWebhookParams changes an endpoint; nil or empty fields are
// unchanged (an empty EnabledEvents leaves the set as is).
type UpdateWebhookParams struct {
	URL           *string
	Name          *string
	Description   *string
	EnabledEvents []string
	State         WebhookState // "" unchanged; enabled clears DisabledReason
}

// ListWebhooksParams pages endpoints by created_at.
type ListWebhooksParams struct {
	Limit    int    // 0 means 20; at most 100
	AfterID  string // the page after this endpoint, in list order
	BeforeID string // the first Limit endpoints before this one, in list order
	Asc      bool   // oldest first; the default is newest first
}

// WebhookPage is one page of endpoints.
type WebhookPage struct {
	Data    []Webhook
	HasMore bool
}

// ListDeliveriesParams pages an endpoint's deliveries, newest first.
type ListDeliveriesParams struct {
	Limit  int // 0 means 20; at most 100
	Cursor string
}

// WebhookService manages a workspace's webhook endpoints. Every method acts
// within the workspace of the Principal carried by ctx; a session
// credential gets EFORBIDDEN.
type WebhookService interface {
	// CreateWebhook returns the endpoint and its signing secret (whsec_…),
	// which nothing else returns. EINVALID names a bad field; a URL that is
	// not https (unless the server allows http) or names a private address
	// (unless allowed) is EINVALID.
	CreateWebhook(ctx context.Context, p CreateWebhookParams) (*Webhook, string, error)
	GetWebhook(ctx context.Context, id string) (*Webhook, error)
	UpdateWebhook(ctx context.Context, id string, p UpdateWebhookParams) (*Webhook, error)
	ListWebhooks(ctx context.Context, p ListWebhooksParams) (*WebhookPage, error)
	// DeleteWebhook deletes the endpoint with its queue: no delivery starts
	// after it returns.
	DeleteWebhook(ctx context.Context, id string) error
	// RegenerateWebhookSecret replaces the signing secret; every delivery
	// attempt from now on is signed with the new one.
	RegenerateWebhookSecret(ctx context.Context, id string) (string, error)
	// ListWebhookDeliveries is the endpoint's delivery log, newest first
	// (Trove's extension).
	ListWebhookDeliveries(ctx context.Context, id string, p ListDeliveriesParams) (*Page[WebhookDelivery], error)
}

// nonPublic are the address ranges, beyond those netip classifies, that a
// webhook may not reach unless the server allows private addresses:
// "this network", shared address space (carrier-grade NAT), IETF protocol
// assignments, benchmarking, reserved, NAT64 and 6to4 (which embed an IPv4
// address), and documentation ranges.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("100::/64"),
}

// IsPrivateAddress reports whether a webhook delivery to a is refused
// unless the server allows private addresses: loopback, private,
// link-local, multicast, unspecified, and the other non-public ranges
// (nonPublic). An IPv4-mapped IPv6 address is judged as its IPv4 address.
// The one rule for the URL check (core) and the sender's dialer (webhook).
func IsPrivateAddress(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

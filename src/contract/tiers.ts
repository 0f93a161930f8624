// spec §2 (tier table) and docs/decisions/0006-tiers.md (sections and payment effect per tier).

export const TIER_IDS = ['dev_portal_execution_billing', 'svc_starter_agents', 'svc_pay_wallet_fund'] as const;
export type TierId = (typeof TIER_IDS)[number];

export const DOCS_SECTIONS = [
  'dev-portal',
  'execution-billing',
  'agent-upload',
  'starter-agents',
  'node-install',
  'wallet-funding',
] as const;
export type DocsSection = (typeof DOCS_SECTIONS)[number];

export interface Tier {
  tier_id: TierId;
  name: string;
  docs_sections: readonly DocsSection[];
  /** Whether an activated session of this tier may enroll a node: every tier that buys execution (runs need a node). */
  node_install: boolean;
  /** A confirmed payment of this tier credits its amount to the payer's wallet. */
  credits_wallet: boolean;
  /**
   * The offer's price in USD cents, which a real provider's payment (Stripe) must carry; null: any amount of at least a
   * cent (a wallet fund credits what was paid).
   */
  price_cents: number | null;
  /** What the sandbox provider charges when a checkout names no amount. */
  sandbox_default_amount_cents: number;
}

export const TIERS: Readonly<Record<TierId, Tier>> = {
  dev_portal_execution_billing: {
    tier_id: 'dev_portal_execution_billing',
    name: 'Dev portal',
    docs_sections: ['dev-portal', 'execution-billing', 'agent-upload'],
    node_install: true,
    credits_wallet: false,
    price_cents: 2900,
    sandbox_default_amount_cents: 2900,
  },
  svc_starter_agents: {
    tier_id: 'svc_starter_agents',
    name: 'Starter agents',
    docs_sections: ['starter-agents', 'node-install', 'agent-upload'],
    node_install: true,
    credits_wallet: false,
    price_cents: 4900,
    sandbox_default_amount_cents: 4900,
  },
  svc_pay_wallet_fund: {
    tier_id: 'svc_pay_wallet_fund',
    name: 'Wallet fund',
    docs_sections: ['wallet-funding'],
    node_install: false,
    credits_wallet: true,
    price_cents: null,
    sandbox_default_amount_cents: 1000,
  },
};

export function isTierId(value: unknown): value is TierId {
  return typeof value === 'string' && (TIER_IDS as readonly string[]).includes(value);
}

export function isDocsSection(value: unknown): value is DocsSection {
  return typeof value === 'string' && (DOCS_SECTIONS as readonly string[]).includes(value);
}

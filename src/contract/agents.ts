// spec §2 (agent SKU table). Prices are integer cents; dollars exist only when formatted for a person.

export const AGENT_IDS = [
  'agent_dev_review_012',
  'agent_sales_outreach_008',
  'agent_svc_skills_005',
  'agent_research_rag_015',
  'agent_ops_monitor_004',
] as const;
export type AgentId = (typeof AGENT_IDS)[number];

export interface AgentSku {
  agent_id: AgentId;
  name: string;
  price_cents: number;
}

export const AGENT_SKUS: readonly AgentSku[] = [
  { agent_id: 'agent_dev_review_012', name: 'Dev review the service', price_cents: 12 },
  { agent_id: 'agent_sales_outreach_008', name: 'Sales outreach the service', price_cents: 8 },
  { agent_id: 'agent_svc_skills_005', name: 'Skills tutor', price_cents: 5 },
  { agent_id: 'agent_research_rag_015', name: 'Research RAG the service', price_cents: 15 },
  { agent_id: 'agent_ops_monitor_004', name: 'Ops monitor agent', price_cents: 4 },
];

const SKU_BY_ID = new Map<string, AgentSku>(AGENT_SKUS.map((sku) => [sku.agent_id, sku]));

export function findAgentSku(agentId: string): AgentSku | undefined {
  return SKU_BY_ID.get(agentId);
}

export function isAgentId(value: unknown): value is AgentId {
  return typeof value === 'string' && SKU_BY_ID.has(value);
}

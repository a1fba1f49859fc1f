/** The agent's version string, sent in every advertisement. */
export const AGENT_VERSION = '0.1.0';

// A Letta app's calls through @letta-ai/letta-client, unchanged, against memvec serve.
// Reads MEMVEC_URL and MEMVEC_KEY; prints one JSON object of what it saw, for the Python test to judge.
// Any error the SDK raises ends the run with its status and message (exit 1).
import Letta, { toFile } from '@letta-ai/letta-client';

const client = new Letta({ baseURL: process.env.MEMVEC_URL, apiKey: process.env.MEMVEC_KEY, maxRetries: 0 });
const seen = {};

async function agents() {
  const made = await client.agents.create({
    name: 'ts-agent', model: 'scripted/echo', tags: ['ts'],
    memory_blocks: [{ label: 'human', value: 'Name: Ana' }, { label: 'persona', value: 'I am Sam.' }],
  });
  seen.created = { id: made.id, name: made.name, labels: made.memory.blocks.map((b) => b.label) };
  const listed = [];
  for await (const agent of client.agents.list({ tags: ['ts'] })) listed.push(agent.id);
  seen.listed = listed;
  seen.retrieved = (await client.agents.retrieve(made.id)).name;
  const changed = await client.agents.update(made.id, { description: 'changed', tags: ['ts', 'more'] });
  seen.updated = { description: changed.description, tags: changed.tags };
  return made.id;
}

async function blocks(agentId) {
  const labels = [];
  for await (const block of client.agents.blocks.list(agentId)) labels.push(block.label);
  seen.block_labels = labels;
  seen.block_value = (await client.agents.blocks.retrieve('human', { agent_id: agentId })).value;
  const updated = await client.agents.blocks.update('human', { agent_id: agentId, value: 'Name: Ana Lima' });
  seen.block_updated = updated.value;
}

async function sharedBlocks(agentId) {
  const other = await client.agents.create({ name: 'ts-other', memory_blocks: [{ label: 'human', value: 'Name: Bo' }] });
  const block = await client.blocks.create({ label: 'team', value: 'Project: apollo', limit: 500 });
  await client.agents.blocks.attach(block.id, { agent_id: agentId });
  const state = await client.agents.blocks.attach(block.id, { agent_id: other.id });
  await client.agents.blocks.update('team', { agent_id: agentId, value: 'Project: gemini' });
  const listed = [];
  for await (const found of client.blocks.list({ label: 'team' })) listed.push(found.id);
  seen.shared = {
    id: block.id, attached: state.memory.blocks.some((b) => b.id === block.id), listed,
    seen_by_other: (await client.agents.blocks.retrieve('team', { agent_id: other.id })).value,
    retrieved: (await client.blocks.retrieve(block.id)).value,
    updated: (await client.blocks.update(block.id, { value: 'Project: hermes' })).value,
  };
  const detached = await client.agents.blocks.detach(block.id, { agent_id: other.id });
  seen.shared.detached = detached.memory.blocks.map((b) => b.label);
  await client.blocks.delete(block.id);
  try {
    await client.blocks.retrieve(block.id);
    seen.shared.after_delete = 'found';
  } catch (err) {
    seen.shared.after_delete = err.status;
  }
  await client.agents.delete(other.id);
}

async function passages(agentId) {
  const made = await client.agents.passages.create(agentId, { text: 'Ana keeps bees in Lisbon', tags: ['home'] });
  await client.agents.passages.create(agentId, { text: 'The meeting moved to Friday' });
  seen.passages = (await client.agents.passages.list(agentId)).map((p) => p.text);
  const found = await client.agents.passages.search(agentId, { query: 'who keeps bees?', top_k: 1 });
  seen.search = found.results.map((r) => r.content);
  await client.agents.passages.delete(made[0].id, { agent_id: agentId });
  seen.after_delete = (await client.agents.passages.list(agentId)).map((p) => p.text);
}

async function streaming(agentId) {
  const stream = await client.agents.messages.create(agentId, { input: 'hello', streaming: true, stream_tokens: true });
  const events = [];
  for await (const chunk of stream) {
    events.push({ type: chunk.message_type, id: chunk.id ?? null, text: chunk.content ?? null,
                  tool: chunk.tool_call?.name ?? null, stop: chunk.stop_reason ?? null, steps: chunk.step_count ?? null });
  }
  seen.stream = events;
  const transcript = [];
  for await (const message of client.agents.messages.list(agentId, { order: 'asc' })) {
    transcript.push({ type: message.message_type, id: message.id, text: message.content ?? null });
  }
  seen.transcript = transcript;
}

const DICE = `def roll_dice(num_sides: int) -> int:
    """Roll a die.

    Args:
        num_sides: How many sides the die has.
    """
    import random
    return random.randint(1, num_sides)
`;

async function tools(agentId) {
  const made = await client.tools.create({ source_code: DICE, tags: ['games'] });
  const again = await client.tools.upsert({ source_code: DICE, description: 'Roll one die.' });
  const named = [];
  for await (const tool of client.tools.list({ name: 'roll_dice' })) named.push(tool.id);
  await client.agents.tools.attach(made.id, { agent_id: agentId });
  const attached = [];
  for await (const tool of client.agents.tools.list(agentId)) attached.push(tool.name);
  await client.agents.tools.detach(made.id, { agent_id: agentId });
  const detached = [];
  for await (const tool of client.agents.tools.list(agentId)) detached.push(tool.name);
  await client.tools.delete(made.id);
  seen.tools = {
    id: made.id, type: made.tool_type, required: made.json_schema.parameters.required,
    upserted: again.id, description: again.description, named, attached, detached,
  };
}

async function files(agentId) {
  const folder = await client.folders.create({ name: 'ts-shelf' });
  await client.agents.folders.attach(folder.id, { agent_id: agentId });
  const lines = Array.from({ length: 30 }, (_, n) => `line ${n + 1}`).join('\n');
  const file = await client.folders.files.upload(folder.id, { file: await toFile(Buffer.from(lines), 'notes.txt') });
  const again = await client.folders.files.upload(folder.id, { file: await toFile(Buffer.from(lines), 'notes.txt') });
  const state = await client.agents.retrieve(agentId);
  const blocks = state.memory.file_blocks.map((b) => ({ label: b.label, open: b.is_open, head: b.value.split('\n')[0] }));
  const listed = [];
  for await (const f of client.agents.files.list(agentId)) listed.push([f.file_name, f.is_open]);
  await client.agents.files.close(file.id, { agent_id: agentId });
  const closed = [];
  for await (const f of client.agents.files.list(agentId, { is_open: false })) closed.push(f.file_name);
  const reopened = await client.agents.files.open(file.id, { agent_id: agentId });
  const closedAll = await client.agents.files.closeAll(agentId);
  const fileTools = state.tools.filter((t) => t.tool_type === 'letta_files_core').map((t) => t.name).sort();
  await client.folders.delete(folder.id);
  const after = await client.agents.retrieve(agentId);
  seen.files = {
    names: [file.file_name, again.file_name, again.original_file_name], blocks, listed, closed, reopened,
    closedAll: [...closedAll].sort(), fileTools, after: after.memory.file_blocks.length,
  };
}

async function conversations(agentId) {
  const made = await client.conversations.create({ agent_id: agentId, summary: 'ts thread' });
  const stream = await client.conversations.messages.create(made.id, { input: 'hi in a thread' });
  const kinds = [];
  for await (const chunk of stream) kinds.push(chunk.message_type);
  const said = [];
  for await (const message of client.conversations.messages.list(made.id)) said.push([message.message_type, message.content ?? null]);
  const listed = (await client.conversations.list({ agent_id: agentId })).map((c) => c.id);
  const after = await client.conversations.retrieve(made.id);
  seen.conversations = {
    id: made.id, agent: made.agent_id === agentId, summary: made.summary, kinds, said, listed,
    messaged: after.last_message_at !== null && after.last_message_at !== undefined,
  };
}

async function exported(agentId) {
  const raw = await client.agents.exportFile(agentId, { use_legacy_format: false });
  const file = typeof raw === 'string' ? JSON.parse(raw) : raw; // typed a string; the SDK parses JSON
  seen.exported = { agents: file.agents.map((a) => a.name), blocks: file.blocks.map((b) => b.label).sort() };
}

async function main() {
  const agentId = await agents();
  await tools(agentId);
  await files(agentId);
  await blocks(agentId);
  await sharedBlocks(agentId);
  await passages(agentId);
  await streaming(agentId);
  await conversations(agentId);
  await exported(agentId);
  await client.agents.delete(agentId);
  try {
    await client.agents.retrieve(agentId);
    seen.after_agent_delete = 'found';
  } catch (err) {
    seen.after_agent_delete = err.status;
  }
  console.log(JSON.stringify(seen));
}

main().catch((err) => {
  console.error(`${err.constructor.name}: ${err.status ?? ''} ${err.message}`);
  process.exit(1);
});

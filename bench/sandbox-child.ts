/**
 * The benchmark's sandbox, in its own process (forked by bench/run.ts): an unthrottled
 * sandbox on 127.0.0.1 that answers the driver's questions (record counts, request log) over IPC.
 * Usage: node dist/bench/sandbox-child.js '<SandboxSpec JSON>'
 */
import { startSandbox } from '../sandbox/index.js';
import type { SandboxCommand, SandboxMessage, SandboxSpec } from './protocol.js';

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as SandboxSpec;
  const t0 = performance.now();
  // Start the sandbox's clock at the real time: svcsync runs on the system clock.
  const sandbox = await startSandbox({
    host: '127.0.0.1',
    unlimited: true,
    scale: spec.scale,
    organizations: spec.organizations,
    seed: spec.seed,
    startTime: new Date().toISOString(),
    tokenExpiresIn: 24 * 3600,
  });
  const organizations = sandbox.organizations().map((o) => o.organization_id);
  const counts: Record<string, Record<string, number>> = {};
  for (const org of organizations) {
    const perOrg: Record<string, number> = {};
    for (const s of spec.count) perOrg[`${s.family}.${s.stream}`] = sandbox.count(org, s.family, s.stream);
    counts[org] = perOrg;
  }
  // Generate and serialize every list record now, before svcsync's clock starts: the sandbox
  // stands in for a remote server, and its generator should not compete with svcsync for the
  // two cores during the measured run (it took 35-45 % of a core there). Every record, past the
  // list cache's usual 250,000 a stream: the 1,000,000-event run must not generate while serving.
  for (const org of organizations) for (const s of spec.count) sandbox.warm(org, s.family, s.stream, true);
  const send = (m: SandboxMessage): void => void process.send?.(m);
  process.on('message', (raw) => {
    const cmd = raw as SandboxCommand;
    if (cmd.type === 'log') {
      const cpu = process.cpuUsage();
      send({ type: 'log', log: sandbox.requestLog(), cpuUserMs: cpu.user / 1000, cpuSystemMs: cpu.system / 1000 });
    } else if (cmd.type === 'reset') sandbox.resetRequestLog();
    else if (cmd.type === 'stop') void sandbox.stop().finally(() => process.exit(0));
  });
  // The driver going away takes the sandbox with it.
  process.on('disconnect', () => void sandbox.stop().finally(() => process.exit(0)));
  send({
    type: 'ready',
    url: sandbox.url,
    credentials: {
      client_id: sandbox.credentials.client_id,
      client_secret: sandbox.credentials.client_secret,
      refresh_token: sandbox.credentials.refresh_token,
    },
    organizations,
    counts,
    startupMs: performance.now() - t0,
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

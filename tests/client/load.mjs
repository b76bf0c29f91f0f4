// Open-loop load: `rate` requests a second for `seconds`, each through `send`, whatever the
// responses. At the end the client is closed (queued requests fail with CLOSED) and the run
// waits for what is in flight. Shared by the pacing test and bench/client.mjs.

/**
 * @param {(url: string) => Promise<Response>} send a pacing client, or any fetch-like function
 * @param {string} url
 * @param {{ rate: number, seconds: number, close?: boolean }} options
 */
export async function offer(send, url, { rate, seconds, close = true }) {
  const statuses = [];
  const settled = [];
  const started = now();
  let offered = 0;
  await new Promise((resolve) => {
    const tick = () => {
      // Catch up by the clock, not by the timer: a late timer must not lower the demand.
      const due = Math.min(Math.floor(((now() - started) * rate) / 1000) + 1, rate * seconds);
      while (offered < due) {
        offered += 1;
        settled.push(
          send(url).then(
            async (response) => {
              statuses.push(response.status);
              await response.arrayBuffer();
            },
            (error) => statuses.push(error?.code ?? error?.name ?? String(error)),
          ),
        );
      }
      if (offered >= rate * seconds) resolve();
      else setTimeout(tick, Math.max(1, 1000 / rate / 2));
    };
    tick();
  });
  const remaining = started + seconds * 1000 - now();
  if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
  const end = now();
  if (close) send.close?.();
  await Promise.all(settled);
  return { offered, statuses, started, end, finished: now() };
}

function now() {
  return performance.timeOrigin + performance.now();
}

// k6 peer for the connect benchmark (Benchmarks/echo-limit.sh): each VU opens one connection (ws:// or wss://;
// a self-signed certificate is accepted, as wsload's tls.insecure does), holds it HOLD seconds and closes it.
// Usage: k6 run -e URL=wss://127.0.0.1:PORT/ -e VUS=1000 -e HOLD=3 k6_connect.js
import ws from 'k6/ws';
import { Counter } from 'k6/metrics';

const opened = new Counter('connects_opened');
const hold = parseFloat(__ENV.HOLD || '3');

export const options = {
  insecureSkipTLSVerify: true,
  scenarios: {
    connect: {
      executor: 'per-vu-iterations',
      vus: Number(__ENV.VUS || 1000),
      iterations: 1,
      maxDuration: `${hold + 30}s`,
    },
  },
  summaryTrendStats: ['med', 'p(99)'],
};

export default function () {
  ws.connect(__ENV.URL, {}, (socket) => {
    socket.on('open', () => {
      opened.add(1);
      socket.setTimeout(() => socket.close(), 1000 * hold);
    });
  });
}

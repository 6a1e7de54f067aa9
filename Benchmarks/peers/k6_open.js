// k6 peer for the open-model benchmark: each VU holds one connection and sends a 64-byte message every
// 1000/RATE ms on a timer, whatever the replies do, for SECONDS; counts what was sent and answered.
// Usage: k6 run -e URL=ws://127.0.0.1:PORT/ -e VUS=5000 -e RATE=10 -e SECONDS=20 k6_open.js
import ws from 'k6/ws';
import { Counter } from 'k6/metrics';

const sent = new Counter('open_sent');
const received = new Counter('open_received');
const message = 'x'.repeat(64);

export const options = {
  scenarios: {
    open: {
      executor: 'per-vu-iterations',
      vus: Number(__ENV.VUS || 5000),
      iterations: 1,
      maxDuration: `${Number(__ENV.SECONDS || 20) + 30}s`,
    },
  },
  summaryTrendStats: ['med', 'p(99)'],
};

export default function () {
  const seconds = parseFloat(__ENV.SECONDS || '20');
  const interval = 1000 / parseFloat(__ENV.RATE || '10');
  ws.connect(__ENV.URL, {}, (socket) => {
    socket.on('open', () => {
      socket.setInterval(() => {
        sent.add(1);
        socket.send(message);
      }, interval);
    });
    socket.on('message', () => received.add(1));
    socket.setTimeout(() => socket.close(), 1000 * seconds);
  });
}

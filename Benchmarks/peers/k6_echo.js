// k6 peer for the side-by-side echo benchmark: each VU holds one connection and keeps one 64-byte
// message in flight, for DURATION. Usage: k6 run -e URL=ws://127.0.0.1:PORT/ -e VUS=1000 -e DURATION=10s k6_echo.js
import ws from 'k6/ws';
import { Counter } from 'k6/metrics';

const roundTrips = new Counter('round_trips');
const message = 'x'.repeat(64);

export const options = {
  vus: Number(__ENV.VUS || 1000),
  duration: __ENV.DURATION || '10s',
  summaryTrendStats: ['med', 'p(99)'],
};

export default function () {
  ws.connect(__ENV.URL, {}, (socket) => {
    socket.on('open', () => socket.send(message));
    socket.on('message', () => {
      roundTrips.add(1);
      socket.send(message);
    });
    socket.setTimeout(() => socket.close(), 1000 * parseFloat(__ENV.SECONDS || '10'));
  });
}

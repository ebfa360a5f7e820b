// A module driver that never gives an outcome: its every operation is a busy loop, which
// holds its thread for good. The suite must end it and judge on, not freeze with it.
export default () => ({
  handle() {
    for (;;);
  },
});

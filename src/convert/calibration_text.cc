// The built-in calibration text (convert/calibration.h). Written for Tessera;
// deliberately mixed in register so that the measured activation statistics
// are not those of a single kind of text.
#include <string_view>

#include "convert/calibration.h"

namespace tessera {

std::string_view builtin_calibration_text() {
  return R"TEXT(The lighthouse keeper climbed the spiral stairs every evening at dusk, counting the steps out of habit: one hundred and twelve. From the lamp room she could see the whole bay, the fishing boats returning in a loose line, and the storm clouds gathering far to the west. She wound the clockwork, trimmed the wick, and wrote the time in the logbook in her small, careful hand.

In 1854, a physician named John Snow traced an outbreak of cholera in London to a single water pump on Broad Street. By mapping the homes of the people who fell ill, he showed that the cases clustered around the pump, and he persuaded the local council to remove its handle. The episode is often told as the birth of modern epidemiology, although the germ theory of disease was not widely accepted until decades later.

Q: How many minutes are there in a week?
A: A day has 24 hours of 60 minutes, so 1,440 minutes. Seven days make 7 × 1,440 = 10,080 minutes.

Q: Why is the sky blue?
A: Sunlight is scattered by the molecules of the air, and shorter wavelengths are scattered much more strongly than longer ones. Blue light therefore reaches our eyes from every direction of the sky, while the sun itself looks slightly yellow.

User: Can you suggest a simple dinner for two that takes less than thirty minutes?
Assistant: Sure! Try a lemon garlic pasta. Boil 200 g of spaghetti. While it cooks, warm olive oil in a pan with two sliced garlic cloves and a pinch of chili flakes. Toss the drained pasta with the oil, the zest and juice of one lemon, a handful of grated parmesan and some chopped parsley. Serve with a green salad.

Shopping list:
- 2 kg potatoes
- 1 dozen eggs
- whole wheat bread
- tomatoes, onions, and fresh basil
- coffee beans (medium roast)

def fibonacci(n: int) -> list[int]:
    """Return the first n Fibonacci numbers."""
    sequence = [0, 1]
    while len(sequence) < n:
        sequence.append(sequence[-1] + sequence[-2])
    return sequence[:n]

for i, value in enumerate(fibonacci(10)):
    print(f"F({i}) = {value}")

#include <stdio.h>
int main(void) {
    int total = 0;
    for (int i = 1; i <= 100; ++i) total += i;
    printf("sum = %d\n", total);
    return 0;
}

The committee met on Tuesday to review the budget for the coming year. Revenue rose by 4.2 percent, mostly from new subscriptions, while costs grew faster than expected because of higher energy prices. The treasurer proposed postponing the renovation of the east wing until spring; after a long discussion, the motion passed by seven votes to three.

Photosynthesis converts light energy into chemical energy. In the chloroplasts of plant cells, water is split, oxygen is released, and carbon dioxide is fixed into sugars through the Calvin cycle. The overall reaction can be summarized as 6 CO2 + 6 H2O + light → C6H12O6 + 6 O2.

"Are you sure this is the right road?" asked Tom, squinting at the map.
"Not at all," said his sister cheerfully, "but it is a very pretty one."

To solve 3x + 7 = 22, subtract 7 from both sides to get 3x = 15, then divide by 3: x = 5. Check: 3 · 5 + 7 = 22.

Les montagnes étaient couvertes de neige, et le village dormait encore quand le premier train est arrivé. Der Zug hatte zehn Minuten Verspätung. El mercado abre a las ocho de la mañana.

A good night's sleep helps memory, mood and concentration. Most adults need seven to nine hours; keeping a regular schedule, avoiding screens before bed and limiting caffeine after noon all make it easier to fall asleep.

SELECT name, COUNT(*) AS orders FROM customers JOIN orders ON orders.customer_id = customers.id GROUP BY name ORDER BY orders DESC LIMIT 5;

In summary, the experiment supports the hypothesis: the treated samples grew 18% faster than the controls (p < 0.01), although the effect was smaller at low temperatures. Further work should test whether the result holds in the field.
)TEXT";
}

}  // namespace tessera

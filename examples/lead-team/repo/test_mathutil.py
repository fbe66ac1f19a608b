import unittest

from mathutil import mean


class MeanTest(unittest.TestCase):
    def test_mean_of_three(self):
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_mean_of_one(self):
        self.assertEqual(mean([5]), 5)


if __name__ == "__main__":
    unittest.main()

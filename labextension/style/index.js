import './base.css';
import './activity.css';
import './marks.css';
import './review.css';
import './status.css';
import './policy.css';

import './base.css';
import './activity.css';
import './marks.css';
import './status.css';
